import GRDB
import HealthProbeTestSupport
import Testing
@testable import HealthProbeArchive

/// The checks a replica runs inside the transaction that applies a bundle: clean on a
/// real archive, and each one finds the damage it is for.
@Suite("Observation checks")
struct ObservationChecksTests {
    /// The problems of the latest observation after `damage`, rolled back afterwards.
    func problems(_ t: TempHome, _ damage: String) throws -> [String] {
        try t.open().archive.writer.write { db -> [String] in
            let obs = try Int64.fetchOne(db, sql: "SELECT max(id) FROM observations")!
            var out: [String] = []
            _ = try db.inSavepoint {
                if !damage.isEmpty { try db.execute(sql: damage, arguments: [obs]) }
                out = try ObservationChecks.problems(db, observationID: obs, samplesAfter: 0)
                return .rollback
            }
            return out
        }
    }

    @Test("a real archive is clean; a summary, its hash and a range that disagree with the ranges are found")
    func findsDamage() throws {
        let t = TempHome()
        try t.simulate(seed: 3, days: [4, 2])
        #expect(try problems(t, "") == [])
        let recount = try problems(t, """
            UPDATE observation_type_summaries SET visible_record_count = visible_record_count + 1
            WHERE rowid = (SELECT min(rowid) FROM observation_type_summaries WHERE observation_id = ?1 AND daily_base_observation_id = ?1)
            """)
        #expect(recount.contains { $0.contains("visible_record_count") && $0.contains("ranges say") }, "\(recount)")
        let hash = try problems(t, """
            UPDATE observation_type_summaries SET aggregate_hash = '00'
            WHERE rowid = (SELECT min(rowid) FROM observation_type_summaries WHERE observation_id = ?1 AND daily_base_observation_id = ?1)
            """)
        #expect(hash.contains { $0.contains("aggregate_hash does not match") }, "\(hash)")
        let range = try problems(t, """
            DELETE FROM sample_visibility_ranges WHERE rowid = (SELECT min(rowid) FROM sample_visibility_ranges WHERE first_observation_id = ?1)
            """)
        #expect(range.contains { $0.contains("derived from the events but not stored") }, "\(range)")
    }
}
