import GRDB
import HealthProbeTestSupport
import Testing
@testable import HealthProbeArchive

/// The checks a replica runs inside the transaction that applies a bundle: clean on a
/// real archive, and each one finds the damage it is for.
@Suite("Observation checks")
struct ObservationChecksTests {
    /// The problems of the latest observation after `damage`, rolled back afterwards.
    /// `recountLimit` 0 checks every summary against its previous one (the large-type path).
    /// `samplesAfter` nil: the observation's own (only the samples it touched are walked);
    /// 0: every sample counted as added (the tables walked whole, as for a chain's first bundle).
    func problems(_ node: NodeArchive, _ damage: String, recountLimit: Int = .max, samplesAfter given: Int64? = 0) throws -> [String] {
        try node.archive.writer.write { db -> [String] in
            let obs = try Int64.fetchOne(db, sql: "SELECT max(id) FROM observations")!
            let samplesAfter = try given ?? Int64.fetchOne(db, sql: "SELECT samples_before FROM observations WHERE id = ?", arguments: [obs])!
            var out: [String] = []
            _ = try db.inSavepoint {
                if !damage.isEmpty { try db.execute(sql: damage, arguments: [obs]) }
                out = try ObservationChecks.problems(db, observationID: obs, samplesAfter: samplesAfter, recountLimit: recountLimit)
                return .rollback
            }
            return out
        }
    }

    /// Damage to the first summary the latest observation computed.
    func summary(_ set: String) -> String {
        """
        UPDATE observation_type_summaries SET \(set)
        WHERE rowid = (SELECT min(rowid) FROM observation_type_summaries WHERE observation_id = ?1 AND daily_base_observation_id = ?1)
        """
    }

    @Test("a real archive is clean; a summary, its hash and a range that disagree with the ranges are found, walking the touched samples or the whole tables",
          arguments: [Int.max, 0], [false, true])
    func findsDamage(recountLimit: Int, whole: Bool) throws {
        let home = TempHome()
        try home.simulate(seed: 3, days: [4, 2])
        let t = try home.open()
        let samplesAfter: Int64? = whole ? 0 : nil
        let before = try t.archive.writer.read { try Int64.fetchOne($0, sql: "SELECT samples_before FROM observations ORDER BY id DESC LIMIT 1") } ?? 0
        #expect(before > 0, "the latest observation follows samples of an earlier one")
        func problems(_ node: NodeArchive, _ damage: String, recountLimit: Int) throws -> [String] {
            try self.problems(node, damage, recountLimit: recountLimit, samplesAfter: samplesAfter)
        }
        #expect(try problems(t, "", recountLimit: recountLimit) == [])
        let recount = try problems(t, summary("visible_record_count = visible_record_count + 1"), recountLimit: recountLimit)
        let expected = recountLimit == 0 ? "the ranges opened and closed since gives" : "ranges say"
        #expect(recount.contains { $0.contains("visible_record_count") && $0.contains(expected) }, "\(recount)")
        let hash = try problems(t, summary("aggregate_hash = '00'"), recountLimit: recountLimit)
        #expect(hash.contains { $0.contains("aggregate_hash does not match") }, "\(hash)")
        let range = try problems(t, """
            DELETE FROM sample_visibility_ranges WHERE rowid = (SELECT min(rowid) FROM sample_visibility_ranges WHERE first_observation_id = ?1)
            """, recountLimit: recountLimit)
        #expect(range.contains { $0.contains("derived from the events but not stored") }, "\(range)")
        // A range that names another version: stored but not derived, and its own missing.
        let version = try problems(t, """
            UPDATE sample_visibility_ranges SET version_id = NULL WHERE rowid = (SELECT min(rowid) FROM sample_visibility_ranges WHERE first_observation_id = ?1)
            """, recountLimit: recountLimit)
        #expect(version.contains { $0.contains("is stored but not derived from the events") }, "\(version)")
        #expect(version.contains { $0.contains("is derived from the events but not stored") }, "\(version)")
        // A second open range of one sample.
        let open = try problems(t, """
            INSERT INTO sample_visibility_ranges(sample_id, version_id, first_observation_id, first_seen_at)
            SELECT sample_id, NULL, first_observation_id, 0 FROM sample_visibility_ranges WHERE first_observation_id = ?1 AND last_observation_id IS NULL LIMIT 1
            """, recountLimit: recountLimit)
        #expect(open.contains { $0.contains("has 2 open ranges") }, "\(open)")
    }

    @Test("a UUID given to a second sample of its type is found, by lookups (a few samples added) and by walking the index (many added)")
    func duplicateUUID() throws {
        let home = TempHome()
        let node = try home.open()
        try capture(node, kind: .anchored, samples: (0..<40).map { hr($0, value: Double(50 + $0)) })
        let last = try node.archive.writer.read { try Int64.fetchOne($0, sql: "SELECT max(id) FROM samples") }!
        let damage = """
            UPDATE samples SET sample_uuid_hash = (SELECT sample_uuid_hash FROM samples WHERE id = (SELECT min(id) FROM samples))
            WHERE id = (SELECT max(id) FROM samples) AND ?1 > 0
            """
        let message = { (id: Int64) in "sample \(id) (HKQuantityTypeIdentifierHeartRate): its UUID hash already names another sample of the type" }
        // Every sample counted as added: the index walk; both holders of the UUID are named.
        // One sample added: its lookup.
        for (after, named) in [(Int64(0), [1, last]), (last - 1, [last])] {
            #expect(try problems(node, "", samplesAfter: after) == [])
            #expect(try problems(node, damage, samplesAfter: after) == named.map(message), "after \(after)")
        }
        // Only the samples added are checked: the duplicate is older than these.
        #expect(try problems(node, damage, samplesAfter: last) == [])
    }

    @Test("a type that only grew is checked against its previous summary: count, sum, maximum and bounds", arguments: [Int.max, 0])
    func growingType(recountLimit: Int) throws {
        let home = TempHome()
        let node = try home.open()
        let t = node
        try capture(node, kind: .anchored, samples: (0..<40).map { hr($0, value: Double(50 + $0)) })
        try capture(node, kind: .anchored, samples: (40..<55).map { hr($0, value: Double(50 + $0 % 7)) })
        #expect(try problems(t, "", recountLimit: recountLimit) == [])
        for (damage, found) in [("visible_record_count = visible_record_count - 1", "visible_record_count"),
                                ("value_sum = value_sum + 0.5", "value_sum differs"),
                                ("value_max = value_max + 1", "value_max or date bounds"),
                                ("earliest_start_date = earliest_start_date + 1", "value_max or date bounds"),
                                ("latest_end_date = latest_end_date - 300", "value_max or date bounds")] {
            let out = try problems(t, summary(damage), recountLimit: recountLimit)
            #expect(out.contains { $0.contains(found) && $0.contains("HeartRate") }, "\(damage): \(out)")
        }
        // An unchanged third observation shares the second's summary: nothing to check, nothing found.
        try capture(node, kind: .anchored, samples: [])
        #expect(try problems(t, "", recountLimit: recountLimit) == [])
    }
}
