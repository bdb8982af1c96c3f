import Foundation
import GRDB
import HealthProbeCanonical

/// Re-derives the materialized aggregates from the visibility ranges
/// (database-design.md 14, "aggregate rebuild checks") and names what differs.
///
/// Summaries: counts, sums, maxima and date bounds against the ranges, and
/// each aggregate hash against the row's content. Daily rows: recomputed per
/// local day of their observation's timezone and compared row by row, every
/// hash checked; a summary that shares an earlier observation's daily rows
/// must have the same timezone and no range of its type opened or closed in
/// between. Problems name observation, type, day and revision, never values.
enum AggregateVerifier {
    struct Outcome {
        var summaryProblems: [String] = []
        var dailyProblems: [String] = []
        var summaries = 0
        var dailyBases = 0
        var dailyRows = 0
    }

    /// Checks every summary (`full`) or the latest observation's and the daily rows they use.
    static func check(_ db: Database, mode: ArchiveVerifier.Mode) throws -> Outcome {
        var out = Outcome()
        let latest = try Int64.fetchOne(db, sql: "SELECT max(observation_id) FROM observation_type_summaries")
        let summaries = try Row.fetchAll(db, sql: """
            SELECT \(StoredSummary.columns), ts.daily_base_observation_id
            FROM observation_type_summaries ts JOIN sample_types st ON st.id = ts.sample_type_id
            WHERE ? OR ts.observation_id = ? ORDER BY ts.observation_id, ts.sample_type_id
            """, arguments: [mode == .full, latest])
        out.summaries = summaries.count
        /// (base observation, type) -> type identifier, for the daily rows to recompute.
        var bases: [[Int64]: String] = [:]
        for s in summaries {
            let summary = StoredSummary(s)
            let obs = summary.observationID, type = summary.typeID, name = summary.typeIdentifier
            out.summaryProblems += try summary.problems(db)
            let base: Int64 = s["daily_base_observation_id"] ?? obs
            if base != obs {
                if base > obs {
                    out.dailyProblems.append("observation \(obs) \(name): shares the daily rows of a later observation \(base)")
                    continue
                }
                if try !sameZone(db, obs, base) {
                    out.dailyProblems.append("observation \(obs) \(name): shares the daily rows of observation \(base), recorded in another time zone")
                }
                if try Aggregates.moved(db, typeID: type, after: base, upTo: obs) {
                    out.dailyProblems.append("observation \(obs) \(name): shares the daily rows of observation \(base), but ranges of the type opened or closed in between")
                }
            }
            bases[[base, type]] = name
        }
        try db.execute(sql: "CREATE TEMP TABLE IF NOT EXISTS hp_daily_check AS SELECT * FROM daily_type_aggregates WHERE 0")
        defer { try? db.execute(sql: "DROP TABLE IF EXISTS temp.hp_daily_check") }
        for key in bases.keys.sorted(by: { ($0[0], $0[1]) < ($1[0], $1[1]) }) {
            let (base, type, name) = (key[0], key[1], bases[key]!)
            out.dailyBases += 1
            out.dailyRows += try checkDaily(db, base: base, type: type, name: name, problems: &out.dailyProblems)
        }
        return out
    }

    /// Recomputes the daily rows of `type` at `base` and compares them and their
    /// hashes with the stored ones. Returns how many stored rows were checked.
    private static func checkDaily(_ db: Database, base: Int64, type: Int64, name: String, problems: inout [String]) throws -> Int {
        guard let o = try Row.fetchOne(db, sql: "SELECT time_zone_identifier, time_zone_seconds_from_gmt FROM observations WHERE id = ?", arguments: [base]) else {
            problems.append("observation \(base) \(name): daily rows name an observation that does not exist")
            return 0
        }
        let days = LocalDays(identifier: o[0], secondsFromGMT: o[1])
        try db.execute(sql: "DELETE FROM temp.hp_daily_check")
        let totals = try Aggregates.Totals.fetch(db, typeID: type, observationID: base)
        if totals.count > 0, let first = totals.earliestStart, let lastStart = totals.latestStart {
            try Aggregates.computeDaily(db, into: "temp.hp_daily_check", obs: base, typeID: type, days: days, from: first, to: lastStart)
        }
        let columns = "bucket_start, bucket_end, visible_record_count, value_sum, value_max, source_revision_id"
        let differing = try Row.fetchAll(db, sql: """
            SELECT 'is stored but not derived from the ranges', * FROM (
                SELECT \(columns) FROM daily_type_aggregates WHERE observation_id = ? AND sample_type_id = ?
                EXCEPT SELECT \(columns) FROM temp.hp_daily_check)
            UNION ALL
            SELECT 'is derived from the ranges but not stored', * FROM (
                SELECT \(columns) FROM temp.hp_daily_check
                EXCEPT SELECT \(columns) FROM daily_type_aggregates WHERE observation_id = ? AND sample_type_id = ?)
            LIMIT 20
            """, arguments: [base, type, base, type])
        for r in differing {
            let revision = (r[6] as Int64?).map { "source revision \($0)" } ?? "no source revision"
            problems.append("observation \(base) \(name): the daily row of the local day from \(CanonicalDate.string(r[1])) (\(revision)) \(r[0] as String)")
        }
        var checked = 0
        let rows = try Row.fetchCursor(db, sql: Aggregates.dailyRowsSQL(onlyUnhashed: false), arguments: [base, type])
        while let r = try rows.next() {
            checked += 1
            let day = CanonicalDate.string(r["bucket_start"])
            guard let stored: String = r["aggregate_hash"] else {
                problems.append("observation \(base) \(name): the daily row of \(day) has no aggregate_hash")
                continue
            }
            if stored != (try Aggregates.dailyHash(r, typeIdentifier: name)) {
                problems.append("observation \(base) \(name): the aggregate_hash of the daily row of \(day) does not match its content")
            }
        }
        return checked
    }

    /// True when two observations bucket days in the same timezone (the rule the
    /// aggregates follow when they share daily rows).
    private static func sameZone(_ db: Database, _ a: Int64, _ b: Int64) throws -> Bool {
        let rows = try Row.fetchAll(db, sql: "SELECT id, time_zone_identifier, time_zone_seconds_from_gmt FROM observations WHERE id IN (?, ?)", arguments: [a, b])
        guard rows.count == 2 else { return false }
        let (x, y) = (rows[0], rows[1])
        let zx: String? = x[1], zy: String? = y[1]
        return zx == zy && (zx != nil || (x[2] as Int?) == (y[2] as Int?))
    }
}

/// One stored summary, as `AggregateVerifier` and `ObservationChecks` read it.
struct StoredSummary {
    /// The columns to select (from `observation_type_summaries ts` joined with `sample_types st`).
    static let columns = """
        ts.observation_id, ts.sample_type_id, st.type_identifier, ts.visible_record_count, ts.value_sum, ts.value_max,
        ts.earliest_start_date, ts.latest_end_date, ts.aggregate_hash
        """
    var observationID: Int64, typeID: Int64, typeIdentifier: String
    var count: Int, sum: Double?, top: Double?, first: Double?, last: Double?, hash: String?

    init(_ r: Row, typeIdentifier name: String? = nil) {
        observationID = r["observation_id"]; typeID = r["sample_type_id"]; typeIdentifier = name ?? r["type_identifier"]
        count = r["visible_record_count"]; sum = r["value_sum"]; top = r["value_max"]
        first = r["earliest_start_date"]; last = r["latest_end_date"]; hash = r["aggregate_hash"]
    }

    private var at: String { "observation \(observationID) \(typeIdentifier)" }

    /// What differs between the summary and a recount of its type's visible ranges, and
    /// between its `aggregate_hash` and its content. Names observation and type, never values.
    func problems(_ db: Database) throws -> [String] {
        var out: [String] = []
        let live = try Aggregates.Totals.fetch(db, typeID: typeID, observationID: observationID)
        if live.count != count { out.append("\(at): visible_record_count \(count), ranges say \(live.count)") }
        if live.valueSum != sum { out.append("\(at): value_sum differs from the ranges") }
        if live.valueMax != top || live.earliestStart != first || live.latestEnd != last {
            out.append("\(at): value_max or date bounds differ from the ranges")
        }
        return out + (try hashProblems())
    }

    /// The same checks against `previous` (the type's summary at an earlier observation of
    /// the chain, itself checked) and the type's ranges opened and closed since, so the
    /// cost follows the change, not the type. Always the count; when no range closed, also
    /// the bounds and the maximum, and the exact sum when both summaries have one (one
    /// unit throughout). The hash as above.
    func problems(_ db: Database, since previous: StoredSummary) throws -> [String] {
        var out: [String] = []
        let (after, upTo) = (previous.observationID, observationID)
        let closed = try Int.fetchOne(db.cachedStatement(sql: """
            SELECT count(*) FROM sample_visibility_ranges r INDEXED BY idx_visibility_open_ranges CROSS JOIN samples s ON s.id = r.sample_id
            WHERE r.last_observation_id > ? AND r.last_observation_id <= ? AND s.sample_type_id = ?
            """), arguments: [after, upTo, typeID]) ?? 0
        let opened = try Row.fetchOne(db.cachedStatement(sql: """
            SELECT count(*), min(v.start_date), max(v.end_date), max(v.numeric_value),
                   CASE WHEN count(v.numeric_value) = 0 THEN 0 ELSE \(ExactSumFunction.name)(v.numeric_value) END
            FROM sample_visibility_ranges r INDEXED BY idx_visibility_point_lookup CROSS JOIN samples s ON s.id = r.sample_id
            CROSS JOIN sample_versions v ON v.id = r.version_id
            WHERE r.first_observation_id > ? AND r.first_observation_id <= ? AND s.sample_type_id = ?
            """), arguments: [after, upTo, typeID])!
        let added: Int = opened[0]
        if previous.count + added - closed != count {
            out.append("\(at): visible_record_count \(count), but the previous summary (observation \(after)) with the ranges opened and closed since gives \(previous.count + added - closed)")
        }
        if closed == 0 {
            func least(_ a: Double?, _ b: Double?) -> Double? { [a, b].compactMap { $0 }.min() }
            func most(_ a: Double?, _ b: Double?) -> Double? { [a, b].compactMap { $0 }.max() }
            if first != least(previous.first, opened[1]) || last != most(previous.last, opened[2]) || top != most(previous.top, opened[3]) {
                out.append("\(at): value_max or date bounds differ from the previous summary (observation \(after)) and the ranges opened since")
            }
            let sumDiffers: Bool
            if added == 0 {
                sumDiffers = sum != previous.sum
            } else if let before = previous.sum.flatMap(Aggregates.storedMicro), let sum, let since = opened[4] as Int64? {
                var expected = ExactMicroSum(before)
                expected.add(since)
                // As SQL stores it: the micro-units divided by the scale.
                sumDiffers = sum != expected.total
            } else {
                // A unit may have arrived or gone, a sum passed 64-bit micro-units, or the previous
                // one is stored past what a double gives back exactly; `verify` recounts.
                sumDiffers = false
            }
            if sumDiffers { out.append("\(at): value_sum differs from the previous summary (observation \(after)) and the ranges opened since") }
        }
        return out + (try hashProblems())
    }

    private func hashProblems() throws -> [String] {
        var out: [String] = []
        if let hash {
            let expected = try Aggregates.summaryHash(typeIdentifier: typeIdentifier, count: count, first: first, last: last, total: sum, top: top)
            if hash != expected { out.append("\(at): aggregate_hash does not match the summary's content") }
        } else {
            out.append("\(at): the summary has no aggregate_hash")
        }
        return out
    }
}
