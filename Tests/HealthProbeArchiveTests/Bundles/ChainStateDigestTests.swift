import Foundation
import GRDB
import HealthProbeCanonical
import Testing
@testable import HealthProbeArchive
import HealthProbeTestSupport

@Suite("The chain-state digest's sort under a bounded cache")
struct ChainStateDigestTests {
    @Test("the writer (64 MiB cache, bounded while the digest sorts) and a reader (8 MiB) give the same digest; the writer's cache size is restored")
    func boundedSortSameDigest() throws {
        let t = TempHome()
        try t.simulate(seed: 5, days: [4, 2])
        let node = try t.open()
        for obs in Int64(1)...2 {
            let (written, cacheAfter) = try node.archive.writer.write { db in
                (try ChainStateDigest.compute(db, observationID: obs), try Int.fetchOne(db, sql: "PRAGMA main.cache_size"))
            }
            let read = try node.archive.writer.read { db in try ChainStateDigest.compute(db, observationID: obs) }
            #expect(written == read && written.visibleCount > 0, "observation \(obs)")
            #expect(cacheAfter == -64 * 1024, "the writer's own cache size once the digest is computed")
        }
        #expect(ChainStateDigest.sorterKiB <= 8 * 1024)
    }

    @Test("the digest equals its definition written out: the visible samples sorted by type identifier and whole strict fingerprint, one canonical line each, at every observation")
    func equalsDefinition() throws {
        let t = TempHome()
        try t.simulate(seed: 9, days: [5, 3, 2])
        let node = try t.open()
        try node.archive.writer.read { db in
            let types = try Int.fetchOne(db, sql: "SELECT count(DISTINCT sample_type_id) FROM samples") ?? 0
            #expect(types > 2, "several types")
            for obs in try Int64.fetchAll(db, sql: "SELECT id FROM observations ORDER BY id") {
                let rows = try Row.fetchAll(db, sql: """
                    SELECT st.type_identifier AS type, lower(hex(s.strict_fingerprint)) AS fp,
                           nullif(lower(hex(s.sample_uuid_hash)), '') AS uuid, nullif(lower(hex(v.payload_hash)), '') AS payload
                    FROM sample_visibility_ranges r JOIN samples s ON s.id = r.sample_id JOIN sample_types st ON st.id = s.sample_type_id
                    LEFT JOIN sample_versions v ON v.id = r.version_id
                    WHERE r.first_observation_id <= ?1 AND (r.last_observation_id IS NULL OR r.last_observation_id > ?1)
                    ORDER BY st.type_identifier, s.strict_fingerprint
                    """, arguments: [obs])
                var stream = SHA256Stream(domain: .chainState)
                func json(_ text: String?) -> String { text.map { "\"\($0)\"" } ?? "null" }
                for r in rows {
                    let line = "{\"payload_hash\":\(json(r["payload"])),\"sample_uuid_hash\":\(json(r["uuid"])),\"strict_fingerprint\":\(json(r["fp"])),\"type\":\(json(r["type"]))}\n"
                    stream.update(Array(line.utf8))
                }
                let expected = ChainStateDigest.Result(digest: stream.finalize(), visibleCount: rows.count)
                #expect(try ChainStateDigest.compute(db, observationID: obs) == expected, "observation \(obs)")
                // Rows handed to the hashing thread one at a time, and a few hundred bytes at a time.
                for chunkBytes in [1, 300] {
                    #expect(try ChainStateDigest.compute(db, observationID: obs, chunkBytes: chunkBytes) == expected, "observation \(obs), \(chunkBytes)-byte chunks")
                }
                #expect(rows.count > 0)
            }
        }
    }

    @Test("a row's absent and empty stored values become the definition's null and empty text; PRAGMA threads is restored after the digest")
    func absentAndEmptyFields() throws {
        var chunk = DigestLines.Chunk(capacity: 64)
        let fingerprint: [UInt8] = [0x0A, 0xFF]
        "T".utf8CString.withUnsafeBytes { chunk.append(UnsafeRawBufferPointer(rebasing: $0.dropLast())) }
        fingerprint.withUnsafeBytes { chunk.append($0) }
        chunk.append(nil)
        chunk.append(nil)
        chunk.append(UnsafeRawBufferPointer(start: nil, count: 0))  // an empty type: empty text
        chunk.append(UnsafeRawBufferPointer(start: nil, count: 0))  // no fingerprint: empty text
        [UInt8](repeating: 0xAB, count: 2).withUnsafeBytes { chunk.append($0) }
        chunk.append(nil)
        let lines = DigestLines()
        lines.add(chunk.bytes)
        var stream = SHA256Stream(domain: .chainState)
        stream.update(Array("""
            {"payload_hash":null,"sample_uuid_hash":null,"strict_fingerprint":"0aff","type":"T"}
            {"payload_hash":null,"sample_uuid_hash":"abab","strict_fingerprint":"","type":""}

            """.utf8))
        #expect(lines.finalize() == stream.finalize())

        let t = TempHome()
        try t.simulate(seed: 5, days: [2])
        let node = try t.open()
        let threads = try node.archive.writer.write { db in
            try db.execute(sql: "PRAGMA threads = 1")
            _ = try ChainStateDigest.compute(db, observationID: 1)
            return try Int.fetchOne(db, sql: "PRAGMA threads")
        }
        #expect(threads == 1)
    }
}
