import Foundation
import GRDB
import Testing
import ZIPFoundation
@testable import HealthProbeArchive
import HealthProbeCanonical
@testable import HealthProbeImport
@testable import HealthProbeSimulator
import HealthProbeTestSupport

@Suite("Apple Health export importer")
struct ImporterTests {
    @Test("a zip whose XML has another name, beside export_cda.xml and junk, is found by content")
    func localizedName() throws {
        let dir = TempDir()
        var e = SyntheticExport(records: 200)
        e.compositeEvery = 50
        try e.writeZip(to: dir.file("export.zip"), xmlName: "Exportieren.xml")
        let t = TempHome()
        let r = try importExport(t, dir.file("export.zip"))
        #expect(r.source.hasSuffix("apple_health_export/Exportieren.xml"))
        #expect(r.status == "completed")
        // 200 records + 4 x (2 blood pressure records, correlation, workout, route).
        #expect(r.records == 200 + 4 * 5)
    }

    @Test("re-import: unchanged writes nothing; edited, removed and added records are exactly that")
    func reimport() throws {
        let dir = TempDir()
        var base = SyntheticExport(records: 3000)
        try base.writeXML(to: dir.file("a.xml"))
        let t = TempHome()
        let first = try importExport(t, dir.file("a.xml"), pageSize: 700)
        #expect(first.appeared == first.records)
        let before = try Counts.of(try t.open())
        let same = try importExport(t, dir.file("a.xml"), pageSize: 700)
        #expect(same.noChanges)
        #expect(try Counts.of(try t.open()) == before)

        base.editEvery = 1000      // records 999, 1999, 2999
        base.removeEvery = 1500    // records 1499, 2999 (2999 removed, so not edited)
        base.added = 4
        try base.writeXML(to: dir.file("b.xml"))
        let r = try importExport(t, dir.file("b.xml"), pageSize: 700)
        #expect(r.changed == 2)
        #expect(r.disappeared == 2)
        #expect(r.appeared == 4)
    }

    @Test("display-unit changes (kJ vs kcal, mi vs km) and new device addresses are not changes")
    func unitsAndDeviceAddresses() throws {
        let dir = TempDir()
        var e = SyntheticExport(records: 600)
        e.compositeEvery = 100
        try e.writeXML(to: dir.file("a.xml"))
        e.alternateUnits = true
        e.deviceAddressSalt = 77
        try e.writeXML(to: dir.file("b.xml"))
        #expect(try String(contentsOfFile: dir.file("b.xml"), encoding: .utf8).contains("unit=\"kJ\""))
        let t = TempHome()
        try importExport(t, dir.file("a.xml"))
        let r = try importExport(t, dir.file("b.xml"))
        #expect(r.noChanges, "appeared \(r.appeared) changed \(r.changed) disappeared \(r.disappeared)")
    }

    @Test("stray control characters are replaced and counted, in the first read and in the reads after it", arguments: [20, 3000])
    func controlCharacters(records: Int) throws {
        let dir = TempDir()
        try SyntheticExport(records: records).writeXML(to: dir.file("a.xml"))
        var text = try String(contentsOfFile: dir.file("a.xml"), encoding: .utf8)
        let watch = text.components(separatedBy: "sourceName=\"Synthetic Watch\"").count - 1
        text = text.replacingOccurrences(of: "sourceName=\"Synthetic Watch\"", with: "sourceName=\"Synthetic\u{01}Watch\u{0B}\"")
        try text.write(toFile: dir.file("a.xml"), atomically: true, encoding: .utf8)
        // 3000 records take several 128 KiB reads.
        #expect(records < 100 || text.utf8.count > 4 * 128 * 1024)
        let r = try importExport(TempHome(), dir.file("a.xml"))
        #expect(r.status == "completed")
        #expect(r.records >= records)  // and the blood-pressure correlations of larger exports
        #expect(watch >= records * 9 / 10 && r.controlCharactersReplaced == 2 * watch)
    }

    @Test("a type missing from a later export disappears; one with a malformed element closes nothing")
    func fullScanSemantics() throws {
        let dir = TempDir()
        let t = TempHome()
        try SyntheticExport(records: 120).writeXML(to: dir.file("a.xml"))
        try importExport(t, dir.file("a.xml"))
        var text = try String(contentsOfFile: dir.file("a.xml"), encoding: .utf8)
        let lines = text.components(separatedBy: "\n")
        // Drop every step record; break one heart-rate record's value.
        var broke = false
        text = lines.filter { !$0.contains("StepCount") }.map { line -> String in
            if !broke && line.contains("HeartRate\"") { broke = true; return line.replacingOccurrences(of: "value=\"", with: "value=\"n/a") }
            return line
        }.joined(separator: "\n")
        try text.write(toFile: dir.file("b.xml"), atomically: true, encoding: .utf8)
        let r = try importExport(t, dir.file("b.xml"))
        #expect(r.status == "needs_review")
        #expect(r.rejected == 1)
        #expect(r.rejections.first?.reason == "value is not a number")
        #expect(r.disappeared == 20)  // the 20 step records; no heart rate
        let node = try t.open()
        let runs = try node.archive.writer.read { db in
            try Row.fetchAll(db, sql: """
                SELECT st.type_identifier, t.status FROM observation_type_runs t JOIN sample_types st ON st.id = t.sample_type_id
                WHERE t.observation_id = ?
                """, arguments: [r.observationId]).reduce(into: [String: String]()) { $0[$1[0]] = $1[1] }
        }
        #expect(runs["HKQuantityTypeIdentifierHeartRate"] == "needs_review")
        #expect(runs["HKQuantityTypeIdentifierStepCount"] == "completed")
    }

    @Test("truncated or corrupt files and non-exports fail clearly and leave the archive as it was")
    func badInput() throws {
        let dir = TempDir()
        var e = SyntheticExport(records: 4000)
        e.compositeEvery = 0
        try e.writeZip(to: dir.file("export.zip"))
        try e.writeXML(to: dir.file("export.xml"))
        let t = TempHome()
        try importExport(t, dir.file("export.zip"), pageSize: 500)
        let before = try Counts.of(try t.open())

        let zip = try Data(contentsOf: URL(fileURLWithPath: dir.file("export.zip")))
        try zip.prefix(zip.count / 2).write(to: URL(fileURLWithPath: dir.file("truncated.zip")))
        var corrupt = zip
        for i in stride(from: 2000, to: min(corrupt.count / 2, 60_000), by: 97) { corrupt[i] ^= 0x5A }
        try corrupt.write(to: URL(fileURLWithPath: dir.file("corrupt.zip")))
        // Intact data that inflates cleanly, but the CRC-32 the zip records for the member is wrong.
        let member = try #require(try ZIPFoundation.Archive(url: URL(fileURLWithPath: dir.file("export.zip")), accessMode: .read)
            .first { $0.path.hasSuffix("export.xml") })
        let crc = withUnsafeBytes(of: member.checksum.littleEndian) { Array($0) }
        var wrongCRC = [UInt8](zip), replaced = 0
        for i in 0..<(wrongCRC.count - 3) where Array(wrongCRC[i..<(i + 4)]) == crc {
            wrongCRC[i] ^= 0xFF
            replaced += 1
        }
        #expect(replaced >= 2)  // the local header and the central directory
        try Data(wrongCRC).write(to: URL(fileURLWithPath: dir.file("wrongcrc.zip")))
        let xml = try Data(contentsOf: URL(fileURLWithPath: dir.file("export.xml")))
        try xml.prefix(xml.count * 2 / 3).write(to: URL(fileURLWithPath: dir.file("truncated.xml")))
        try Data("just some text, not an export\n".utf8).write(to: URL(fileURLWithPath: dir.file("notes.txt")))

        for (name, code) in [("truncated.zip", ImportError.Code.corruptZip), ("corrupt.zip", .corruptZip), ("wrongcrc.zip", .corruptZip),
                             ("truncated.xml", .malformedXML), ("notes.txt", .notAnExport), ("missing.zip", .notFound)] {
            do {
                try importExport(t, dir.file(name), pageSize: 500)
                Issue.record("\(name) imported")
            } catch let error as ImportError {
                #expect(error.code == code, "\(name): \(error)")
                #expect(error.message.contains(name) || error.message.contains("export.xml"), "\(name): \(error.message)")
            }
            #expect(try Counts.of(try t.open()) == before, "\(name) changed the archive")
        }
        // Failed attempts are on record as failed observations with no events.
        let statuses = try t.open().archive.writer.read { db in try String.fetchAll(db, sql: "SELECT status FROM observations ORDER BY id") }
        #expect(statuses.first == "completed")
        #expect(statuses.dropFirst().allSatisfy { $0 == "failed" })
    }

    @Test("HRV beat lists and statistics nested in WorkoutActivity (which the DTD does not allow) are archived")
    func nestedElements() throws {
        let export = try inlineExport(exportDate: "2024-06-01 09:00:00 +0200", """
         <Record type="HKQuantityTypeIdentifierHeartRateVariabilitySDNN" sourceName="Synthetic Watch" sourceVersion="10.1" unit="ms" creationDate="2024-05-01 07:00:00 +0200" startDate="2024-05-01 06:58:00 +0200" endDate="2024-05-01 06:59:00 +0200" value="48.2">
          <HeartRateVariabilityMetadataList>
           <InstantaneousBeatsPerMinute bpm="61" time="6:58:01.12 AM"/>
           <InstantaneousBeatsPerMinute bpm="63" time="6:58:02.07 AM"/>
          </HeartRateVariabilityMetadataList>
         </Record>
         <Workout workoutActivityType="HKWorkoutActivityTypeWalking" duration="20" durationUnit="min" sourceName="Synthetic Watch" sourceVersion="10.1" creationDate="2024-05-01 18:21:00 +0200" startDate="2024-05-01 18:00:00 +0200" endDate="2024-05-01 18:20:00 +0200">
          <WorkoutActivity uuid="11111111-2222-4333-8444-555555555555" startDate="2024-05-01 18:00:00 +0200" endDate="2024-05-01 18:20:00 +0200" duration="20" durationUnit="min">
           <WorkoutEvent type="HKWorkoutEventTypeSegment" date="2024-05-01 18:10:00 +0200" duration="10" durationUnit="min"/>
           <WorkoutStatistics type="HKQuantityTypeIdentifierDistanceWalkingRunning" startDate="2024-05-01 18:00:00 +0200" endDate="2024-05-01 18:20:00 +0200" sum="1.25" unit="mi"/>
          </WorkoutActivity>
         </Workout>
        """)
        let t = TempHome()
        let r = try importExport(t, export.path)
        #expect(r.status == "completed")
        #expect(r.records == 2)
        let all = try metadataJSON(t)
        let hrv = all.first { $0.contains("hp:beats") }
        #expect(hrv?.contains("\"bpm\":\"61\"") == true)
        let workout = all.first { $0.contains("hp:workout_activities") } ?? ""
        // The nested statistic kept, with its distance converted from miles to metres.
        #expect(workout.contains("DistanceWalkingRunning"))
        #expect(workout.contains("\"sum\":2011.68"))
        #expect(workout.contains("\"unit\":\"m\""))
        #expect(workout.contains("HKWorkoutEventTypeSegment"))
        // Dates in nested elements are canonical UTC.
        #expect(workout.contains("2024-05-01T16:00:00.000Z"))
    }


    @Test("entities a DTD declares are never expanded: the reference is an error with its position, and nothing is imported")
    func declaredEntitiesNotExpanded() throws {
        let dir = TempDir()
        let xml = """
        <?xml version="1.0" encoding="UTF-8"?>
        <!DOCTYPE HealthData [
        <!ENTITY a "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa">
        <!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">
        <!ATTLIST HealthData locale CDATA #REQUIRED>
        ]>
        <HealthData locale="en_US">
         <ExportDate value="2024-06-02 09:00:00 +0200"/>
         <Record type="HKQuantityTypeIdentifierStepCount" sourceName="Synthetic &amp; Phone &b;" unit="count" startDate="2024-06-01 00:30:00 +0200" endDate="2024-06-01 00:40:00 +0200" value="100"/>
        </HealthData>
        """
        try xml.write(toFile: dir.file("export.xml"), atomically: true, encoding: .utf8)
        let t = TempHome()
        #expect {
            try importExport(t, dir.file("export.xml"))
        } throws: { error in
            let e = error as? ImportError
            return e?.code == .malformedXML && e?.message.contains("line 9, column 88") == true
        }
        let samples = try t.open().archive.writer.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM samples") }
        #expect(samples == 0)
    }

    @Test("daily aggregates of an import are in the export's local days; a rebuild gives the same rows; re-import shares them")
    func aggregatesInLocalDays() throws {
        let export = try oneLocalDayExport()
        let t = TempHome()
        #expect(try importExport(t, export.path).status == "completed")
        func daily(_ db: Database) throws -> [String] {
            try Row.fetchAll(db, sql: """
                SELECT observation_id, bucket_start, bucket_end, visible_record_count, value_sum, aggregate_hash
                FROM daily_type_aggregates ORDER BY observation_id, bucket_start, source_revision_id
                """).map { "\($0)" }
        }
        do {
            let node = try t.open()
            let incremental = try node.archive.writer.read { db in try daily(db) }
            let buckets = try node.archive.writer.read { db in try Double.fetchAll(db, sql: "SELECT bucket_start FROM daily_type_aggregates") }
            #expect(buckets.map(CanonicalDate.string) == ["2024-05-31T22:00:00.000Z"])
            let rebuilt = try node.archive.writer.write { db in
                try Aggregates.rebuildAll(db, now: 0)
                return try daily(db)
            }
            #expect(rebuilt == incremental)
        }
        // An unchanged re-import shares the first import's daily rows instead of recomputing them.
        #expect(try importExport(t, export.path).status == "completed")
        let bases = try t.open().archive.writer.read { db in
            try Int64.fetchAll(db, sql: "SELECT daily_base_observation_id FROM observation_type_summaries ORDER BY observation_id")
        }
        #expect(bases.count == 2 && bases[0] == bases[1])
    }
    @Test("the device string is parsed without its memory address")
    func deviceString() {
        let d = DeviceString.parse("<<HKDevice: 0x533ad2350>, name:Apple Watch, manufacturer:Apple Inc., model:Watch, hardware:Watch4,4, software:9.6.3>")
        #expect(d?.name == "Apple Watch")
        #expect(d?.hardwareVersion == "Watch4,4")
        #expect(d?.softwareVersion == "9.6.3")
        #expect(d?.manufacturer == "Apple Inc.")
    }

    @Test("unit canonicalization")
    func units() {
        #expect(UnitCanon.canonical(4.184, "kJ").1 == "kcal")
        #expect(abs(UnitCanon.canonical(4.184, "kJ").0 - 1) < 1e-12)
        #expect(UnitCanon.canonical(1, "mi") == (1609.344, "m"))
        #expect(UnitCanon.canonical(212, "degF") == (100, "degC"))
        #expect(UnitCanon.canonical(5, "mmol<180.1558800000541>/L").1 == "mg/dL")
        #expect(UnitCanon.canonical(3, "count") == (3, "count"))
    }
}

@Suite("Import under a full disk")
struct FullDiskTests {
    @Test("SQLITE_FULL mid-import: a clear error, and the archive exactly as before")
    func fullDisk() throws {
        let dir = TempDir()
        try SyntheticExport(records: 200).writeXML(to: dir.file("small.xml"))
        try SyntheticExport(records: 20_000).writeXML(to: dir.file("big.xml"))
        let t = TempHome()
        try importExport(t, dir.file("small.xml"))
        let node = try t.open()
        let before = try Counts.of(node)
        // Cap the database file a little above its current size: writes then fail with SQLITE_FULL.
        try node.archive.writer.writeWithoutTransaction { db in
            let pages = try Int.fetchOne(db, sql: "PRAGMA page_count") ?? 0
            try db.execute(sql: "PRAGMA max_page_count = \(pages + 40)")
        }
        var o = AppleHealthImporter.Options()
        o.pageSize = 500
        #expect { _ = try AppleHealthImporter(node: node, options: o).importExport(at: dir.file("big.xml")) } throws: { e in
            guard let e = e as? ImportError else { return false }
            return e.code == .storage && e.message.contains("disk is full")
        }
        #expect(try Counts.of(node) == before)
        let last = try node.archive.writer.read { db in try String.fetchOne(db, sql: "SELECT status FROM observations ORDER BY id DESC LIMIT 1") }
        #expect(last == "failed")
    }
}
