import Foundation
import GRDB
import Testing
@testable import HealthProbeArchive
import HealthProbeCanonical
@testable import HealthProbeImport
@testable import HealthProbeSimulator
import HealthProbeTestSupport

/// Writes a 30-record export with `dtd` in its header, breaks one step record's start
/// date, imports it, and checks that only that record is refused, at its true line.
func expectOneRejectedRecordAtItsLine(dtd: String, _ name: String) throws {
    let dir = TempDir()
    var e = SyntheticExport(records: 30)
    e.dtd = dtd
    try e.writeXML(to: dir.file("export.xml"))
    var text = try String(contentsOfFile: dir.file("export.xml"), encoding: .utf8)
    let lines = text.components(separatedBy: "\n")
    let target = try #require(lines.firstIndex { $0.contains("<Record") && $0.contains("StepCount") })
    text = lines.enumerated().map { $0.offset == target ? $0.element.replacingOccurrences(of: "startDate=\"", with: "startDate=\"x") : $0.element }.joined(separator: "\n")
    try text.write(toFile: dir.file("export.xml"), atomically: true, encoding: .utf8)
    let t = TempHome()
    let r = try importExport(t, dir.file("export.xml"))
    #expect(r.records == 29, "\(name)")
    #expect(r.rejected == 1, "\(name)")
    #expect(r.rejections.first?.line == target + 1, "\(name)")
    #expect(r.rejections.first?.reason == "startDate is not a date", "\(name)")
    #expect(r.status == "needs_review", "\(name)")
}

/// Two correlation members and a workout route related; the blood glucose unit with a
/// molar mass converted to mg/dL.
func expectMembersRoutesAndGlucoseUnit(_ db: Database) throws {
    let kinds = try String.fetchAll(db, sql: "SELECT relationship_kind FROM sample_relationships ORDER BY 1")
    #expect(kinds.filter { $0 == "correlation_member" }.count == 2)
    #expect(kinds.contains("workout_route"))
    let units = try String.fetchAll(db, sql: "SELECT DISTINCT unit FROM sample_versions WHERE unit IS NOT NULL")
    #expect(units.contains("mg/dL"))
    #expect(!units.contains { $0.hasPrefix("mmol<") })
}

/// The quirks of real exports, on exports the project writes itself (`QuirkyExport`,
/// `SyntheticDTD`): the same cases as the public fixtures, without them.
@Suite("Apple Health export importer on generated quirky exports")
struct GeneratedQuirkTests {
    @Test("DTDs of export versions 13 and 14 and the broken iOS 16 one do not stop the import; line numbers stay true",
          arguments: SyntheticDTD.allCases)
    func dtds(_ dtd: SyntheticDTD) throws {
        try expectOneRejectedRecordAtItsLine(dtd: dtd.text, "\(dtd)")
    }

    @Test("the broken iOS 16 DTD really is broken: its VisionPrescription attribute list is never closed")
    func brokenDTDIsBroken() {
        let text = SyntheticDTD.iOS16Broken.text
        let attlist = text.components(separatedBy: "<!ATTLIST VisionPrescription")[1]
        #expect(attlist.components(separatedBy: "<!")[0].contains(">") == false)
        #expect(SyntheticDTD.v14.text.components(separatedBy: "<!ATTLIST VisionPrescription")[1].components(separatedBy: "<!")[0].contains(">"))
    }

    @Test("v14 DTD: every element archived, correlation members and routes related, glucose in mg/dL, UTC dates, Me only as hashes; re-import changes nothing")
    func everyElement() throws {
        let dir = TempDir()
        try QuirkyExport(dtd: .v14).writeXML(to: dir.file("export.xml"))
        let t = TempHome()
        let r = try importExport(t, dir.file("export.xml"))
        #expect(r.status == "completed")
        #expect(r.rejected == 0)
        #expect(r.records == QuirkyExport.importableElements)
        let before: Counts
        do {
            let node = try t.open()
            try node.archive.writer.read { db throws in
                try expectMembersRoutesAndGlucoseUnit(db)
                let rows = try Row.fetchAll(db, sql: """
                    SELECT v.start_date, v.numeric_value FROM sample_versions v JOIN samples s ON s.id = v.sample_id JOIN sample_types st ON st.id = s.sample_type_id
                    WHERE st.type_identifier = 'HKQuantityTypeIdentifierBloodGlucose' ORDER BY v.start_date
                    """)
                #expect(rows.map { CanonicalDate.string($0[0]) } == ["2024-01-09T11:30:00.000Z", "2024-01-09T17:30:00.000Z"])
                let glucose = rows.map { $0[1] as Double }
                // 4.59 mmol/L at 180.15588 g/mol is 82.69 mg/dL.
                #expect(glucose.count == 2 && abs(glucose[0] - 4.59 * 18.015588) < 1e-6)
                let notes = try String.fetchOne(db, sql: "SELECT notes FROM observations") ?? ""
                #expect(notes.contains("\"me\""))
                #expect(!notes.contains(QuirkyExport.dateOfBirth))
                let stored = try String.fetchAll(db, sql: "SELECT metadata_json FROM metadata_blobs").joined()
                #expect(!stored.contains(QuirkyExport.dateOfBirth))
            }
            before = try Counts.of(node)
        }
        let again = try importExport(t, dir.file("export.xml"))
        #expect(again.noChanges)
        #expect(again.records == QuirkyExport.importableElements)
        #expect(try Counts.of(try t.open()) == before)
    }

    @Test("no DTD: metadata keys differing only in case are both kept; the route's file reference is kept")
    func caseOnlyKeys() throws {
        let dir = TempDir()
        try QuirkyExport().writeXML(to: dir.file("export.xml"))
        let t = TempHome()
        let r = try importExport(t, dir.file("export.xml"))
        #expect(r.status == "completed")
        let all = try metadataJSON(t)
        let meal = try #require(all.first { $0.contains("Lunch") })
        #expect(meal.contains("\"Meal\":\"Lunch\"") && meal.contains("\"meal\":\"lunch\""), "\(meal.count) bytes")
        #expect(all.joined().contains("\"hp:file_reference\":\"/\(QuirkyExport.routeFile)\""))
    }

    @Test("zip with __MACOSX members and .DS_Store; typographic apostrophes and multi-line attributes read as the plain XML")
    func zipApostrophesMultiLine() throws {
        let dir = TempDir()
        try QuirkyExport(multiLineAttributes: true).writeZip(to: dir.file("export.zip"))
        try QuirkyExport().writeXML(to: dir.file("plain.xml"))
        #expect(try String(contentsOfFile: dir.file("plain.xml"), encoding: .utf8).contains("Synthetic’s Watch"))
        let t = TempHome()
        let r = try importExport(t, dir.file("export.zip"))
        #expect(r.status == "completed")
        #expect(r.rejected == 0)
        #expect(r.source.hasSuffix("apple_health_export/export.xml"))
        #expect(r.records == QuirkyExport.importableElements)
        // The same records on one line each: the same identities and values, so nothing changes.
        let plain = try importExport(t, dir.file("plain.xml"))
        #expect(plain.records == r.records)
        #expect(plain.noChanges, "appeared \(plain.appeared) changed \(plain.changed) disappeared \(plain.disappeared)")
        // Five source names, the typographic apostrophe kept apart from none.
        let sources = try t.open().archive.writer.read { db in try Int.fetchOne(db, sql: "SELECT count(DISTINCT source_name_hash) FROM sources") }
        #expect(sources == 5)
    }

    @Test("an upper-case or localized XML name inside the zip is found by content", arguments: ["Export.xml", "EXPORT.XML", "Exportación.xml"])
    func xmlName(_ name: String) throws {
        let dir = TempDir()
        try QuirkyExport(dtd: .v13).writeZip(to: dir.file("export.zip"), xmlName: name)
        let r = try importExport(TempHome(), dir.file("export.zip"))
        #expect(r.status == "completed")
        #expect(r.source.hasSuffix("apple_health_export/\(name)"))
        #expect(r.records == QuirkyExport.importableElements)
    }
}
