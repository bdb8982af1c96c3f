import Foundation
import GRDB
import Testing
@testable import HealthProbeArchive
@testable import HealthProbeImport
@testable import HealthProbeSimulator
import HealthProbeTestSupport

/// A strict fingerprint whose 16-byte prefix another sample of its type holds (schema 14,
/// docs/decisions/2026-11-27-fingerprint-prefix-unique.md): the importer passes over that
/// slot to the next occurrence, as it does for an exact duplicate, and every re-import
/// finds the sample there again instead of adding another.
@Suite("Fingerprint slots")
struct FingerprintSlotTests {
    @Test("a taken prefix moves a record to the next occurrence, and re-imports find it there")
    func takenPrefix() throws {
        let dir = TempDir()
        try SyntheticExport(records: 400).writeXML(to: dir.file("a.xml"))
        let t = TempHome()
        let first = try importExport(t, dir.file("a.xml"))
        #expect(first.appeared == first.records && first.records >= 400)
        // One sample keeps its prefix and gets another tail: as if another record had taken
        // the prefix of this record's fingerprint (a real pair would have to be crafted).
        let samples = try t.open().archive.writer.write { db in
            let id = try #require(try Int64.fetchOne(db, sql: "SELECT id FROM samples WHERE sample_uuid_hash IS NULL ORDER BY id LIMIT 1"))
            let fp = try #require(try Data.fetchOne(db, sql: "SELECT strict_fingerprint FROM samples WHERE id = ?", arguments: [id]))
            try db.execute(sql: "UPDATE samples SET strict_fingerprint = ? WHERE id = ?", arguments: [fp.prefix(16) + Data(count: 16), id])
            return try Int.fetchOne(db, sql: "SELECT count(*) FROM samples") ?? 0
        }
        let second = try importExport(t, dir.file("a.xml"))
        #expect(second.records == first.records && !second.noChanges)
        let (count, shifted) = try t.open().archive.writer.read { db in
            (try Int.fetchOne(db, sql: "SELECT count(*) FROM samples") ?? 0,
             // The record's new sample: the altered one's prefix, another whole fingerprint.
             try Int.fetchOne(db, sql: """
                SELECT count(*) FROM samples a JOIN samples b ON b.sample_type_id = a.sample_type_id AND b.id > a.id
                  AND substr(b.strict_fingerprint, 1, 8) = substr(a.strict_fingerprint, 1, 8)
                WHERE substr(a.strict_fingerprint, 17) = zeroblob(16)
                """) ?? 0)
        }
        #expect(count == samples + 1 && shifted == 1)
        for _ in 0..<2 {
            let again = try importExport(t, dir.file("a.xml"))
            #expect(again.noChanges && again.unchanged == again.records, "appeared \(again.appeared), disappeared \(again.disappeared)")
        }
        #expect(try t.open().archive.writer.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM samples") } == samples + 1)
    }
}
