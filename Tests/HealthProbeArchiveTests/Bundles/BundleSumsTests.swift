import Foundation
import GRDB
import Synchronization
import Testing
@testable import HealthProbeArchive
import HealthProbeCanonical
import HealthProbeTestSupport

@Suite("Aggregates from what a bundle's lines add up to")
struct BundleSumsTests {
    /// The replica's aggregates, every column but when they were computed, in a fixed order.
    static func aggregates(_ db: Database) throws -> [[DatabaseValue]] {
        let summaries = try Row.fetchAll(db, sql: """
            SELECT observation_id, sample_type_id, visible_record_count, appeared_count, disappeared_count, representation_changed_count,
                   earliest_start_date, latest_end_date, value_sum, value_max, aggregate_hash, daily_base_observation_id
            FROM observation_type_summaries ORDER BY observation_id, sample_type_id
            """)
        let daily = try Row.fetchAll(db, sql: """
            SELECT observation_id, sample_type_id, bucket_start, bucket_end, visible_record_count, value_sum, value_max, source_revision_id, aggregate_hash
            FROM daily_type_aggregates ORDER BY observation_id, sample_type_id, bucket_start, source_revision_id
            """)
        return (summaries + daily).map { Array($0.databaseValues) }
    }

    /// The aggregates computed again in full from the rows (`Aggregates.rebuildAll`, no
    /// shortcut), in a savepoint rolled back.
    static func recomputed(_ replica: Archive) throws -> [[DatabaseValue]] {
        try replica.writer.write { db in
            var rows: [[DatabaseValue]] = []
            try db.inSavepoint {
                try Aggregates.rebuildAll(db, now: 1, allowDelta: false)
                rows = try Self.aggregates(db)
                return .rollback
            }
            return rows
        }
    }

    @Test("a simulated history applied to a new replica: the aggregates equal a full recomputation from the rows; the change counts are never read back, and a first bundle's sums are read back only for types whose values they cannot sum")
    func sameAsFromRows() throws {
        let t = TempHome()
        try t.simulate(seed: 21, days: [6, 2, 2])
        let node = try t.open()
        let dir = TempDir()
        let replica = try newReplica(in: dir)
        // Statements of the applies that read the aggregates' inputs back from the rows.
        let reads = Mutex<(sweeps: [Int], changeCounts: Int)>(([], 0))
        try replica.writer.writeWithoutTransaction { db in
            db.trace(options: .statement) { event in
                guard case .statement(let statement) = event else { return }
                let sql = statement.sql
                if sql.hasPrefix("SELECT start_date, end_date, numeric_value, unit, source_revision_id FROM (") {
                    reads.withLock { $0.sweeps[$0.sweeps.count - 1] += 1 }
                } else if sql.contains("ifnull(sum(e.event_kind =") {
                    reads.withLock { $0.changeCounts += 1 }
                }
            }
        }
        var previous: String?
        for obs in Int64(1)...3 {
            let (lines, hash) = try bundleLines(node, obs, previous: previous)
            reads.withLock { $0.sweeps.append(0) }
            #expect(try BundleApplier.apply(replica, lines: lines, manifestHash: hash, now: 1) == .applied(observationID: obs, sequence: Int(obs)))
            previous = hash
        }
        // Types of the first observation whose visible values a sweep cannot sum: a sample
        // without a value, or more than one unit.
        let (unsummable, types) = try replica.writer.read { db in
            (try Int.fetchOne(db, sql: """
                SELECT count(*) FROM (SELECT s.sample_type_id FROM sample_versions v JOIN samples s ON s.id = v.sample_id
                    WHERE v.created_observation_id = 1 GROUP BY s.sample_type_id HAVING count(v.numeric_value) < count(*) OR count(DISTINCT v.unit) > 1)
                """) ?? -1,
             try Int.fetchOne(db, sql: "SELECT count(DISTINCT sample_type_id) FROM observation_type_runs WHERE observation_id = 1") ?? 0)
        }
        let read = reads.withLock { $0 }
        #expect(types > unsummable && unsummable >= 0, "the first bundle has \(types) types, \(unsummable) of them unsummable")
        #expect(read.sweeps[0] == unsummable, "the first bundle's visible sets read back \(read.sweeps[0]) times")
        #expect(read.changeCounts == 0)
        // What the lines added up to is what the rows give: recomputed in full, in a
        // savepoint rolled back.
        let applied = try replica.writer.read { try Self.aggregates($0) }
        let recomputed = try Self.recomputed(replica)
        #expect(!applied.isEmpty)
        let same = applied == recomputed  // not printed whole when they differ
        #expect(same, "the aggregates differ from a full recomputation")
    }

    @Test("a first bundle with a value beyond the sums' 64-bit micro-units, or whose sum is: applied, each such sum absent (null) as a full recomputation leaves it, the others exact",
          arguments: [1e300, 9.3e12, 5e12])
    func valueBeyondMicroUnits(value: Double) throws {
        let (home, bundles) = try BundleMeaningTests.chain()
        defer { withExtendedLifetime(home) {} }
        // Every version with a value gets `value` (5e12 fits alone; two of them pass Int64's
        // micro-units), rehashed; the events and ranges naming them follow the new hashes.
        var rehashed: [JSONValue: JSONValue] = [:]
        var changed = 0
        let (lines, hash) = try editedBundle(bundles[0].0, rehashPayload: false) { _, o in
            var item = o
            if o["kind"] == .string("version"), case .object(var payload)? = o["payload"], case .number? = payload["numeric_value"] {
                payload["numeric_value"] = .number(value)
                item["payload"] = .object(payload)
                let new = JSONValue.string(try ArchiveHasher.sha256(.payload, json: .object(payload)))
                rehashed[o["payload_hash"]!] = new
                item["payload_hash"] = new
                changed += 1
            } else if let old = o["payload_hash"], let new = rehashed[old] {
                item["payload_hash"] = new
            }
            return [item]
        }
        try #require(changed > 1)
        let dir = TempDir()
        let replica = try newReplica(in: dir)
        #expect(try BundleApplier.apply(replica, lines: lines, manifestHash: hash, now: 1) == .applied(observationID: 1, sequence: 1))
        // Each type of one unit: its visible values and its summary's sum.
        let sums = try replica.writer.read { db in
            try Row.fetchAll(db, sql: """
                SELECT ts.value_sum, count(v.numeric_value) AS n FROM observation_type_summaries ts
                JOIN samples s ON s.sample_type_id = ts.sample_type_id JOIN sample_visibility_ranges r ON r.sample_id = s.id
                JOIN sample_versions v ON v.id = r.version_id
                WHERE ts.observation_id = 1 GROUP BY ts.sample_type_id HAVING n > 0 AND count(DISTINCT v.unit) = 1 AND count(v.numeric_value) = count(*)
                """).map { (sum: $0[0] as Double?, n: $0[1] as Int) }
        }
        try #require(!sums.isEmpty)
        for (sum, n) in sums {
            // Beyond: at or past 2^63 micro-units.
            let beyond = Double(n) * value * 1e6 >= 0x1p63
            let expected: Double? = beyond ? nil : Double(n) * value
            let shown = sum.map { "\($0)" } ?? "absent"
            #expect(sum == expected, "\(n) values of \(value): sum \(shown)")
        }
        #expect(sums.contains { $0.sum == nil })
        let applied = try replica.writer.read { try Self.aggregates($0) }
        let same = applied == (try Self.recomputed(replica))
        #expect(same, "the aggregates differ from a full recomputation")
    }

    @Test("a first bundle with a version no range shows: the type's sums are not used (they would count it), and the aggregates equal a full recomputation")
    func versionWithoutRange() throws {
        let (home, bundles) = try BundleMeaningTests.chain()
        defer { withExtendedLifetime(home) {} }
        // A second version of the first valued sample, another value, named by no event or range.
        var added = false
        let (lines, hash) = try editedBundle(bundles[0].0, rehashPayload: false) { _, o in
            guard !added, o["kind"] == .string("version"), case .object(var payload)? = o["payload"], case .number(let v)? = payload["numeric_value"] else { return [o] }
            added = true
            payload["numeric_value"] = .number(v + 1000)
            var other = o
            other["payload"] = .object(payload)
            other["payload_hash"] = .string(try ArchiveHasher.sha256(.payload, json: .object(payload)))
            return [o, other]
        }
        try #require(added)
        let dir = TempDir()
        let replica = try newReplica(in: dir)
        #expect(try BundleApplier.apply(replica, lines: lines, manifestHash: hash, now: 1) == .applied(observationID: 1, sequence: 1))
        let applied = try replica.writer.read { try Self.aggregates($0) }
        let recomputed = try Self.recomputed(replica)
        let same = !applied.isEmpty && applied == recomputed
        #expect(same, "the aggregates differ from a full recomputation")
    }
}
