import Foundation
import GRDB
import Testing
@testable import HealthProbeArchive
import HealthProbeCanonical
@testable import HealthProbeImport
@testable import HealthProbeSimulator
import HealthProbeTestSupport

/// The importer on public fixtures from other projects' test suites (`../shared/fixtures`,
/// beside the repository in CI only). `GeneratedQuirkTests` covers the same quirks with
/// exports the project writes itself, so a lone clone loses no coverage.
@Suite("Apple Health export importer on public fixtures", .enabled(if: SharedFixtures.available, Comment(rawValue: SharedFixtures.skipReason)))
struct PublicFixtureTests {
    @Test("fixture with the v14 DTD: every element archived, correlation members and routes related, re-import changes nothing")
    func grllFixture() throws {
        let t = TempHome()
        let r = try importExport(t, SharedFixtures.path("grll-apple-health-mcp/export.xml"))
        #expect(r.status == "completed")
        #expect(r.records == 36)
        #expect(r.appeared == 36)
        #expect(r.rejected == 0)
        let before: Counts
        do {
        let node = try t.open()
        try node.archive.writer.read { db throws in
            try expectMembersRoutesAndGlucoseUnit(db)
            // Dates are stored in UTC: 12:30 +0100 is 11:30Z.
            let bg = try Double.fetchOne(db, sql: """
                SELECT min(v.start_date) FROM sample_versions v JOIN samples s ON s.id = v.sample_id JOIN sample_types st ON st.id = s.sample_type_id
                WHERE st.type_identifier = 'HKQuantityTypeIdentifierBloodGlucose'
                """)
            #expect(bg.map(CanonicalDate.string) == "2024-01-09T11:30:00.000Z")
            // Me is kept only as privacy hashes.
            let notes = try String.fetchOne(db, sql: "SELECT notes FROM observations") ?? ""
            #expect(notes.contains("\"me\""))
            #expect(!notes.contains("1995-01-15"))
            // Its bundle verifies (notes within the 1,024 bytes an observation item holds).
            #expect(notes.utf8.count <= BundleItemSchema.maxText)
        }
        let file = t.root + "/b1.jsonl"
        try node.archive.writer.read { db in _ = try BundleFile.write(db, observationID: 1, previousManifestHash: nil, to: file) }
        #expect(throws: Never.self) { _ = try BundleFile.verify(file, expected: nil) }
        before = try Counts.of(node)
        }
        let again = try importExport(t, SharedFixtures.path("grll-apple-health-mcp/export.xml"))
        #expect(again.noChanges)
        #expect(again.records == 36)
        #expect(try Counts.of(try t.open()) == before)
    }

    @Test("fixture without DTD: metadata keys differing only in case are both kept")
    func dogsheepFixture() throws {
        let t = TempHome()
        let r = try importExport(t, SharedFixtures.path("dogsheep-healthkit-to-sqlite/tests_export.xml"))
        #expect(r.status == "completed")
        #expect(r.records > 0)
        let all = try metadataJSON(t).joined()
        #expect(all.contains("HKWeatherTemperature"))
        let r2 = try importExport(t, SharedFixtures.path("dogsheep-healthkit-to-sqlite/zip_contents_export.xml"))
        #expect(r2.status == "completed")
        #expect(try metadataJSON(t).joined().contains("hp:file_reference"))
    }

    @Test("zip with __MACOSX members and .DS_Store; typographic apostrophes and multi-line attributes")
    func zipFixture() throws {
        let t = TempHome()
        let r = try importExport(t, SharedFixtures.path("alxdrcirilo-apple-health-parser/export.zip"))
        #expect(r.status == "completed")
        #expect(r.source.hasSuffix("apple_health_export/export.xml"))
        let x = try importExport(t, SharedFixtures.path("alxdrcirilo-apple-health-parser/export.xml"))
        #expect(x.records == r.records)
    }

    @Test("the broken iOS 16 DTD and the v13 DTD (headers of real exports) do not stop the import; line numbers stay true")
    func dtds() throws {
        for name in ["apple-dtd/dtd_v12_ios16_BROKEN_from_jshrake-healthkit-to-sqlite.txt", "apple-dtd/dtd_v13_from_k0rventen-apple-health-grafana.txt"] {
            let header = try String(contentsOfFile: SharedFixtures.path(name), encoding: .utf8)
            try expectOneRejectedRecordAtItsLine(dtd: header.replacingOccurrences(of: "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n", with: ""), name)
        }
    }
}
