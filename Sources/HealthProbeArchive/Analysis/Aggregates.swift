import Foundation
import GRDB
import HealthProbeCanonical

/// Materialized aggregates (database-design.md 5.8, 6.5, 6.8), computed in
/// SQLite from visibility ranges after each type run.
///
/// `observation_type_summaries` gets a row per type run. `daily_type_aggregates`
/// is differential: when a type's visible set did not change since its last
/// summary (no range of the type opened or closed in between, same timezone),
/// the new summary shares the earlier daily rows through
/// `daily_base_observation_id` instead of copying them.
public enum Aggregates {
    /// Values are summed exactly in integer micro-units, so a sum does not
    /// depend on row order (a replica hashes the same aggregates as its node).
    static let sumScale = 1_000_000.0

    /// A value in the integer micro-units sums are taken in, as `hp_exact_micro_sum` takes
    /// it in SQL (`round(v * 1e6)`, half away from zero); nil beyond 64 bits (or not a
    /// number): such a value leaves its sum absent.
    static func micro(_ value: Double) -> Int64? {
        let x = (value * sumScale).rounded()
        guard x >= -0x1p63 && x < 0x1p63 else { return nil }
        return Int64(x)
    }

    /// A stored sum (micro-units divided by the scale, as a double) back in micro-units, when
    /// that gives exactly the micro-units it was stored from: below 2^51 of them (about 2.25e9
    /// in the values' unit) the double's rounding cannot move the result by half a micro-unit.
    /// Nil past that: a sum continued from it would differ from a recount, so it is recounted.
    static func storedMicro(_ stored: Double) -> Int64? {
        guard let m = micro(stored), m.magnitude < 1 << 51 else { return nil }
        return m
    }

    /// The exact sum of `numeric_value` in micro-units, null with more than one unit, and
    /// null when it (or a value) is beyond 64-bit micro-units, about ±9.2e12: a sum is exact
    /// or absent (`prefix`: the table alias with its dot, or empty). SQLite's own `sum` would
    /// fail the statement instead, and with it the capture or the bundle
    /// (`hp_exact_micro_sum`, registered on each connection: `ExactSumFunction`).
    static func exactSumSQL(_ prefix: String) -> String {
        "CASE WHEN count(DISTINCT \(prefix)unit) <= 1 THEN \(ExactSumFunction.name)(\(prefix)numeric_value) / \(sumScale) END"
    }

    /// The SQL of the samples of `typeID` visible at observation `obs`
    /// (arguments: type, obs, obs).
    static let visibleSQL = """
        SELECT v.id AS version_id, v.sample_id, v.start_date, v.end_date, v.numeric_value, v.unit, v.source_revision_id
        FROM samples s INDEXED BY \(SampleIndexes.byTypeAndFingerprint)
        JOIN sample_visibility_ranges r ON r.sample_id = s.id
        JOIN sample_versions v ON v.id = r.version_id
        WHERE s.sample_type_id = ? AND r.first_observation_id <= ? AND (r.last_observation_id IS NULL OR r.last_observation_id > ?)
        """

    /// How `update` computed a summary.
    public enum Path: Sendable, Equatable {
        /// Unchanged type: the previous summary, sharing its daily rows.
        case shared
        /// From the previous summary and the ranges opened and closed since.
        case delta
        /// A full pass over the type's visible samples.
        case full
    }

    /// Computes the summary of `typeID` at `observationID` and, when the type
    /// changed, its daily rows. Replaces what was there.
    /// `allowDelta: false` forces the full computation (tests compare the two).
    /// `changes`: the type's appeared, disappeared and changed events at `obs` when the
    /// caller counted every one it inserted (a capture's run); otherwise they are counted.
    /// `visible`: the type's whole visible set at `obs` summed by the caller as it was
    /// written (a capture's first run of a type that made nothing disappear or change);
    /// used when it is usable and in the observation's time zone.
    @discardableResult
    public static func update(_ db: Database, observationID obs: Int64, typeID: Int64, now: Double, allowDelta: Bool = true,
                              changes known: ChangeCounts? = nil) throws -> Path {
        var none: Sweep?
        return try update(db, observationID: obs, typeID: typeID, now: now, allowDelta: allowDelta, changes: known, visible: &none)
    }

    @discardableResult
    static func update(_ db: Database, observationID obs: Int64, typeID: Int64, now: Double, allowDelta: Bool = true,
                       changes known: ChangeCounts?, visible: inout Sweep?) throws -> Path {
        guard let o = try Row.fetchOne(db.cachedStatement(sql: "SELECT device_chain_id, time_zone_identifier, time_zone_seconds_from_gmt FROM observations WHERE id = ?"), arguments: [obs]) else {
            throw ArchiveError(.notFound, "no observation \(obs) to aggregate")
        }
        let chain: Int64 = o["device_chain_id"]
        let zoneID: String? = o["time_zone_identifier"]
        let zoneOffset: Int? = o["time_zone_seconds_from_gmt"]
        try db.cachedStatement(sql: "DELETE FROM daily_type_aggregates WHERE observation_id = ? AND sample_type_id = ?").execute(arguments: [obs, typeID])
        try db.cachedStatement(sql: "DELETE FROM observation_type_summaries WHERE observation_id = ? AND sample_type_id = ?").execute(arguments: [obs, typeID])
        // The type's identifier, fetched once, when a path needs it.
        var fetchedIdentifier: String?
        func identifier() throws -> String {
            if let t = fetchedIdentifier { return t }
            let t = try String.fetchOne(db.cachedStatement(sql: "SELECT type_identifier FROM sample_types WHERE id = ?"), arguments: [typeID]) ?? ""
            fetchedIdentifier = t
            return t
        }
        // Used, it is consumed (nil afterwards).
        if allowDelta, var sweep = visible, sweep.isIn(zoneID: zoneID, zoneOffset: zoneOffset) {
            if try sweep.write(db, obs: obs, typeID: typeID, typeIdentifier: try identifier(), changes: {
                try known ?? ChangeCounts.fetch(db, observationID: obs, typeID: typeID, fromEvents: true)
            }, now: now) {
                visible = nil
                return .full
            }
        }

        // The previous summary of the type in this chain, and whether anything moved since.
        let previous = try previousSummary(db, typeID: typeID, before: obs, chain: chain)
        // Nothing to count or recompute when no range of the type opened or closed since the previous summary.
        let unmoved = try previous.map { try !moved(db, typeID: typeID, after: $0["observation_id"], upTo: obs) } ?? false
        let sameZone = previous.map { ($0["zid"] as String?) == zoneID && (zoneID != nil || ($0["zoff"] as Int?) == zoneOffset) } ?? false
        if let p = previous, sameZone, unmoved {
            let pid: Int64 = p["observation_id"]
            try insertSummary(db, obs: obs, typeID: typeID, count: p["visible_record_count"], changes: ChangeCounts(),
                              first: p["earliest_start_date"], last: p["latest_end_date"], total: p["value_sum"], top: p["value_max"],
                              hash: p["aggregate_hash"], dailyBase: p["daily_base_observation_id"] ?? pid, now: now)
            return .shared
        }

        let typeIdentifier = try identifier()
        let days = LocalDays(identifier: zoneID, secondsFromGMT: zoneOffset)
        if allowDelta, let p = previous, sameZone, !unmoved,
           try updateByDelta(db, obs: obs, typeID: typeID, typeIdentifier: typeIdentifier, previous: p, days: days, now: now, changes: known) {
            return .delta
        }
        // No previous summary to start from: the full computation, in one sweep when it can.
        if allowDelta, previous == nil,
           try updateBySweep(db, obs: obs, typeID: typeID, typeIdentifier: typeIdentifier, zoneID: zoneID, zoneOffset: zoneOffset, now: now, changes: known) {
            return .full
        }
        // Driven from the type's samples here: a full pass already costs the type's size.
        let changes = unmoved ? ChangeCounts() : try known ?? ChangeCounts.fetch(db, observationID: obs, typeID: typeID, fromEvents: false)
        let totals = try Totals.fetch(db, typeID: typeID, observationID: obs)
        let n = totals.count, first = totals.earliestStart, last = totals.latestEnd, total = totals.valueSum, top = totals.valueMax
        try insertSummary(db, obs: obs, typeID: typeID, count: n, changes: changes, first: first, last: last, total: total, top: top,
                          hash: try summaryHash(typeIdentifier: typeIdentifier, count: n, first: first, last: last, total: total, top: top),
                          dailyBase: obs, now: now)
        guard n > 0, let first, let lastStart = totals.latestStart else { return .full }
        try writeDaily(db, obs: obs, typeID: typeID, typeIdentifier: typeIdentifier, days: days, from: first, to: lastStart)
        return .full
    }

    /// The type's latest summary before observation `obs` in `chain` (its columns, plus its
    /// observation's time zone as `zid` and `zoff`).
    static func previousSummary(_ db: Database, typeID: Int64, before obs: Int64, chain: Int64) throws -> Row? {
        try Row.fetchOne(db.cachedStatement(sql: """
            SELECT ts.*, o.time_zone_identifier AS zid, o.time_zone_seconds_from_gmt AS zoff
            FROM observation_type_summaries ts JOIN observations o ON o.id = ts.observation_id
            WHERE ts.sample_type_id = ? AND ts.observation_id < ? AND o.device_chain_id = ?
            ORDER BY ts.observation_id DESC LIMIT 1
            """), arguments: [typeID, obs, chain])
    }

    /// Appeared, disappeared and representation-changed events of a type at an observation.
    public struct ChangeCounts: Sendable, Equatable {
        public var appeared = 0, disappeared = 0, changed = 0

        public init(appeared: Int = 0, disappeared: Int = 0, changed: Int = 0) {
            self.appeared = appeared
            self.disappeared = disappeared
            self.changed = changed
        }

        mutating func add(_ other: ChangeCounts) {
            appeared += other.appeared
            disappeared += other.disappeared
            changed += other.changed
        }

        /// `fromEvents`: driven from the observation's events (cost follows the changes);
        /// otherwise from the type's samples, probing each one's events (cost follows the type).
        static func fetch(_ db: Database, observationID obs: Int64, typeID: Int64, fromEvents: Bool) throws -> ChangeCounts {
            let from = fromEvents
                ? "sample_observation_events e CROSS JOIN samples s ON s.id = e.sample_id WHERE e.observation_id = ? AND s.sample_type_id = ?"
                // The kinds are named so each probe is a point lookup of the events' UNIQUE(observation_id, event_kind, sample_id).
                : "samples s INDEXED BY \(SampleIndexes.byTypeAndFingerprint) CROSS JOIN sample_observation_events e ON e.sample_id = s.id AND e.observation_id = ? AND e.event_kind IN \(EventKind.rangeKindsSQL) WHERE s.sample_type_id = ?"
            let r = try Row.fetchOne(db.cachedStatement(sql: """
                SELECT ifnull(sum(e.event_kind = \(EventKind.appeared.sql)), 0) AS a, ifnull(sum(e.event_kind = \(EventKind.disappeared.sql)), 0) AS d,
                       ifnull(sum(e.event_kind = \(EventKind.representationChanged.sql)), 0) AS c
                FROM \(from)
                """), arguments: [obs, typeID])!
            return ChangeCounts(appeared: r["a"], disappeared: r["d"], changed: r["c"])
        }
    }

    /// The aggregate hash of a type summary, over content the same in every replica.
    static func summaryHash(typeIdentifier: String, count: Int, first: Double?, last: Double?, total: Double?, top: Double?) throws -> String {
        var fields: [String: JSONValue] = [:]
        fields["kind"] = .string("type_summary")
        fields["type"] = .string(typeIdentifier)
        fields["visible_record_count"] = .int(count)
        fields["earliest_start_date"] = first.map { .string(CanonicalDate.string($0)) } ?? .null
        fields["latest_end_date"] = last.map { .string(CanonicalDate.string($0)) } ?? .null
        fields["value_sum"] = total.map(JSONValue.number) ?? .null
        fields["value_max"] = top.map(JSONValue.number) ?? .null
        return try ArchiveHasher.sha256(.aggregate, json: .object(fields))
    }

    static func insertSummary(_ db: Database, obs: Int64, typeID: Int64, count: Int, changes: ChangeCounts, first: Double?, last: Double?,
                              total: Double?, top: Double?, hash: String?, dailyBase: Int64, now: Double) throws {
        try db.cachedStatement(sql: """
            INSERT INTO observation_type_summaries(observation_id, sample_type_id, visible_record_count, appeared_count, disappeared_count,
                representation_changed_count, earliest_start_date, latest_end_date, value_sum, value_max, aggregate_hash,
                daily_base_observation_id, computed_at)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """).execute(arguments: [obs, typeID, count, changes.appeared, changes.disappeared, changes.changed, first, last, total, top, hash, dailyBase, now])
    }

    /// The summary and daily rows of a changed type from the previous summary
    /// plus the ranges that opened and closed since, when that gives exactly what
    /// the full computation would (one unit, values present, no closed range at an
    /// extreme); false (nothing written) otherwise. Cost follows the changes and
    /// the touched days, not the type's size.
    static func updateByDelta(_ db: Database, obs: Int64, typeID: Int64, typeIdentifier: String, previous p: Row,
                              days: LocalDays, now: Double, changes known: ChangeCounts? = nil) throws -> Bool {
        let pid: Int64 = p["observation_id"]
        let base: Int64 = p["daily_base_observation_id"] ?? pid
        let pCount: Int = p["visible_record_count"]
        guard pCount > 0, let pSum = p["value_sum"] as Double?, let pFirst = p["earliest_start_date"] as Double?,
              let pLast = p["latest_end_date"] as Double?, let pMax = p["value_max"] as Double? else { return false }
        // The visible set's unit at the previous summary (one unit, since its sum is not null).
        guard let unit = try String.fetchOne(db.cachedStatement(sql: "SELECT unit FROM (\(visibleSQL)) LIMIT 1"), arguments: [typeID, pid, pid]) else { return false }
        let rows = try Row.fetchCursor(db.cachedStatement(sql: """
            SELECT v.start_date, v.end_date, v.numeric_value, v.unit, 1 AS sign, v.source_revision_id
            FROM sample_visibility_ranges r CROSS JOIN samples s ON s.id = r.sample_id CROSS JOIN sample_versions v ON v.id = r.version_id
            WHERE r.first_observation_id > ? AND r.first_observation_id <= ? AND (r.last_observation_id IS NULL OR r.last_observation_id > ?)
              AND s.sample_type_id = ?
            UNION ALL
            SELECT v.start_date, v.end_date, v.numeric_value, v.unit, -1 AS sign, v.source_revision_id
            FROM sample_visibility_ranges r CROSS JOIN samples s ON s.id = r.sample_id CROSS JOIN sample_versions v ON v.id = r.version_id
            WHERE r.last_observation_id > ? AND r.last_observation_id <= ? AND r.first_observation_id <= ?
              AND s.sample_type_id = ?
            """), arguments: [pid, obs, obs, typeID, pid, obs, pid, typeID])
        var count = pCount
        // The previous sum, unless the double it is stored as no longer gives its micro-units.
        guard let pMicro = Self.storedMicro(pSum) else { return false }
        var micro = ExactMicroSum(pMicro)
        var top = pMax
        // A closed range held the maximum: the new one is read from the new daily rows.
        var topFromDaily = false
        // A closed range held the earliest start or the latest end: harmless only when an
        // opened range reaches as far (then it is the new extreme).
        var closedFirst = false, closedLast = false
        var openedFirst = Double.infinity, openedLast = -Double.infinity
        // Opened ranges summed per local day and source revision (merged into the previous
        // daily rows); days where a range closed (recomputed).
        var added = DailyDelta()
        var closedDays = Set<Double>()
        // Changed samples mostly share days.
        var cursor = LocalDays.Cursor(days)
        while let r = try rows.next() {
            // Columns by position: start_date, end_date, numeric_value, unit, sign, source_revision_id.
            guard let value = r[2] as Double?, (r[3] as String?) == unit else { return false }
            let sign: Int = r[4]
            let start: Double = r[0], end: Double = r[1]
            let valueMicro = Self.micro(value)
            let day = cursor.dayStart(start)
            count += sign
            if sign < 0 { micro.subtract(valueMicro) } else { micro.add(valueMicro) }
            if sign > 0 {
                top = max(top, value)
                openedFirst = min(openedFirst, start); openedLast = max(openedLast, end)
                // Too many groups to hold: one pass over the type instead.
                guard added.add(day: day, revision: r[5], micro: valueMicro, value: value) else { return false }
            } else {
                if start <= pFirst { closedFirst = true }
                if end >= pLast { closedLast = true }
                if value >= pMax { topFromDaily = true }
                closedDays.insert(day)
            }
        }
        guard count > 0 else { return false }
        // Otherwise only a full pass knows the new earliest start or latest end.
        if closedFirst && openedFirst > pFirst { return false }
        if closedLast && openedLast < pLast { return false }
        let first = min(pFirst, openedFirst), last = max(pLast, openedLast)
        // A sum beyond 64-bit micro-units: the full pass says so, as the verifier's recount does.
        guard let total = micro.total else { return false }
        try writeDailyByDelta(db, obs: obs, base: base, typeID: typeID, typeIdentifier: typeIdentifier, added: added, closedDays: closedDays,
                              days: days, from: first, to: last)
        if topFromDaily {
            top = try Double.fetchOne(db.cachedStatement(sql: "SELECT max(value_max) FROM daily_type_aggregates WHERE observation_id = ? AND sample_type_id = ?"),
                                      arguments: [obs, typeID]) ?? top
        }
        // Driven from this observation's events: they follow the changes, not the type's size.
        let changes = try known ?? ChangeCounts.fetch(db, observationID: obs, typeID: typeID, fromEvents: true)
        try insertSummary(db, obs: obs, typeID: typeID, count: count, changes: changes, first: first, last: last, total: total, top: top,
                          hash: try summaryHash(typeIdentifier: typeIdentifier, count: count, first: first, last: last, total: total, top: top),
                          dailyBase: obs, now: now)
        return true
    }

    /// The full computation as one sweep over the type's visible samples, summary
    /// and daily rows summed in the same pass instead of the separate SQL passes
    /// (totals, daily grouping, changes): exactly what those give when every sample
    /// has a value, all in one unit; false (nothing written) otherwise, or when the
    /// daily groups would pass `DailyDelta.limit`. A new chain's first bundle on a
    /// replica comes this way for every type whose samples have values in one unit.
    static func updateBySweep(_ db: Database, obs: Int64, typeID: Int64, typeIdentifier: String, zoneID: String?, zoneOffset: Int?, now: Double,
                              changes known: ChangeCounts? = nil) throws -> Bool {
        let rows = try Row.fetchCursor(db.cachedStatement(sql: "SELECT start_date, end_date, numeric_value, unit, source_revision_id FROM (\(visibleSQL))"),
                                       arguments: [typeID, obs, obs])
        var sweep = Sweep(zoneID: zoneID, zoneOffset: zoneOffset)
        while let r = try rows.next() {
            // Columns by position: start_date, end_date, numeric_value, unit, source_revision_id.
            sweep.add(start: r[0], end: r[1], value: r[2], unit: r[3], revision: r[4])
            guard sweep.usable else { return false }
        }
        return try sweep.write(db, obs: obs, typeID: typeID, typeIdentifier: typeIdentifier, changes: {
            try known ?? ChangeCounts.fetch(db, observationID: obs, typeID: typeID, fromEvents: true)
        }, now: now)
    }

    static func insertDailyStatement(_ db: Database) throws -> Statement {
        try db.cachedStatement(sql: """
            INSERT INTO daily_type_aggregates(observation_id, sample_type_id, bucket_start, bucket_end, visible_record_count,
                value_sum, value_max, source_revision_id, aggregate_hash)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
            """)
    }

    /// Inserts a day's groups as daily rows of their own (hashed afterwards), in revision order.
    static func insertNewGroups(_ insert: Statement, obs: Int64, typeID: Int64, day: Double, end: Double, groups: [Int64?: DailyDelta.Group]) throws {
        for (revision, g) in groups.sorted(by: { ($0.key ?? .min) < ($1.key ?? .min) }) {
            try insert.execute(arguments: [obs, typeID, day, end, g.count, g.micro.total, g.top, revision, nil])
        }
    }

    /// Opened ranges of a changed type summed per local day and source revision:
    /// count, exact sum in micro-units, maximum. Bounded: `add` refuses a group
    /// beyond `limit` (the caller then runs the full pass).
    struct DailyDelta {
        struct Group {
            var count = 0, micro = ExactMicroSum(), top = -Double.infinity

            mutating func add(micro m: Int64?, value: Double) {
                count += 1
                micro.add(m)
                top = max(top, value)
            }

            mutating func add(_ g: Group) {
                count += g.count
                micro.add(g.micro)
                top = max(top, g.top)
            }
        }
        static let limit = 50_000
        private(set) var days: [Double: [Int64?: Group]] = [:]
        private var groups = 0

        mutating func add(day: Double, revision: Int64?, micro: Int64?, value: Double) -> Bool {
            var g = Group()
            g.add(micro: micro, value: value)
            return add(day: day, revision: revision, group: g)
        }

        /// Adds a group's sums (samples of one day and revision) to that day and revision.
        mutating func add(day: Double, revision: Int64?, group: Group) -> Bool {
            if days[day]?[revision] == nil {
                guard groups < Self.limit else { return false }
                groups += 1
            }
            days[day, default: [:]][revision, default: Group()].add(group)
            return true
        }
    }

    /// The daily rows of a changed type from the previous ones (`base`'s): untouched
    /// days copied; a day where only ranges opened gets the previous rows plus the
    /// opened ranges' sums (`added`), exact as the full pass; a day where a range
    /// closed is recomputed from its samples. When a quarter or more of the type's
    /// days had a range closed, one pass over the type computes every day instead:
    /// each day's recomputation walks that day's versions of every type.
    static func writeDailyByDelta(_ db: Database, obs: Int64, base: Int64, typeID: Int64, typeIdentifier: String, added: DailyDelta,
                                  closedDays: Set<Double>, days: LocalDays, from: Double, to: Double) throws {
        if !closedDays.isEmpty {
            let baseDays = try Int.fetchOne(db.cachedStatement(sql: "SELECT count(DISTINCT bucket_start) FROM daily_type_aggregates WHERE observation_id = ? AND sample_type_id = ?"),
                                            arguments: [base, typeID]) ?? 0
            if closedDays.count * 4 >= baseDays {
                try writeDaily(db, obs: obs, typeID: typeID, typeIdentifier: typeIdentifier, days: days, from: from, to: to)
                return
            }
        }
        try db.ensureTempTable(TempTable.touched)
        try db.cachedStatement(sql: "DELETE FROM temp.hp_touched").execute()
        let mark = try db.cachedStatement(sql: "INSERT OR IGNORE INTO temp.hp_touched(bucket_start) VALUES (?)")
        for d in closedDays { try mark.execute(arguments: [d]) }
        for d in added.days.keys { try mark.execute(arguments: [d]) }
        try db.cachedStatement(sql: """
            INSERT INTO daily_type_aggregates(observation_id, sample_type_id, bucket_start, bucket_end, visible_record_count,
                value_sum, value_max, source_revision_id, aggregate_hash)
            SELECT ?, sample_type_id, bucket_start, bucket_end, visible_record_count, value_sum, value_max, source_revision_id, aggregate_hash
            FROM daily_type_aggregates
            WHERE observation_id = ? AND sample_type_id = ? AND bucket_start NOT IN (SELECT bucket_start FROM temp.hp_touched)
            """).execute(arguments: [obs, base, typeID])
        try db.cachedStatement(sql: "DELETE FROM temp.hp_touched").execute()
        let recompute = try db.cachedStatement(sql: """
            INSERT INTO daily_type_aggregates(observation_id, sample_type_id, bucket_start, bucket_end, visible_record_count,
                value_sum, value_max, source_revision_id, aggregate_hash)
            SELECT ?, ?, ?, ?, count(*),
                   \(exactSumSQL("v.")),
                   max(v.numeric_value), v.source_revision_id, NULL
            FROM sample_versions v
            CROSS JOIN samples s ON s.id = v.sample_id
            CROSS JOIN sample_visibility_ranges r ON r.sample_id = v.sample_id AND r.version_id = v.id
            WHERE v.start_date >= ? AND v.start_date < ? AND s.sample_type_id = ?
              AND r.first_observation_id <= ? AND (r.last_observation_id IS NULL OR r.last_observation_id > ?)
            GROUP BY v.source_revision_id
            """)
        func recomputeDay(_ d: Double) throws {
            let end = days.nextDayStart(d)
            try recompute.execute(arguments: [obs, typeID, d, end, d, end, typeID, obs, obs])
        }
        for d in closedDays.sorted() { try recomputeDay(d) }
        let baseRows = try db.cachedStatement(sql: """
            SELECT source_revision_id, bucket_end, visible_record_count, value_sum, value_max, aggregate_hash
            FROM daily_type_aggregates WHERE observation_id = ? AND sample_type_id = ? AND bucket_start = ?
            """)
        let insert = try insertDailyStatement(db)
        for d in added.days.keys.sorted() where !closedDays.contains(d) {
            var groups = added.days[d]!
            // A day's previous rows: a handful (one per source revision).
            let rows = try Row.fetchAll(baseRows, arguments: [base, typeID, d])
            // A previous row without a sum or maximum (no values, or a sum beyond 64-bit micro-units),
            // or one whose stored sum no longer gives its micro-units (`storedMicro`), cannot be
            // added to, nor can a sum that added up passes them: the day is recomputed.
            var merged: [Int64?: Double]? = [:]
            for r in rows {
                let revision: Int64? = r[0]
                guard let g = groups[revision] else { continue }
                var micro = ExactMicroSum((r[3] as Double?).flatMap(Self.storedMicro))
                micro.add(g.micro)
                guard r[4] as Double? != nil, let total = micro.total else { merged = nil; break }
                merged?[revision] = total
            }
            guard let merged, !groups.values.contains(where: { $0.micro.total == nil }) else {
                try recomputeDay(d)
                continue
            }
            for r in rows {
                let revision: Int64? = r[0]
                guard let g = groups.removeValue(forKey: revision) else {
                    try insert.execute(arguments: [obs, typeID, d, r[1] as Double, r[2] as Int, r[3] as Double?, r[4] as Double?, revision, r[5] as String?])
                    continue
                }
                try insert.execute(arguments: [obs, typeID, d, r[1] as Double, (r[2] as Int) + g.count, merged[revision]!,
                                               max(r[4] as Double, g.top), revision, nil])
            }
            try insertNewGroups(insert, obs: obs, typeID: typeID, day: d, end: days.nextDayStart(d), groups: groups)
        }
        try hashDaily(db, obs: obs, typeID: typeID, typeIdentifier: typeIdentifier)
    }

    /// A type's visible samples at an observation, summed up in SQLite.
    public struct Totals: Equatable {
        public var count: Int
        public var earliestStart: Double?
        public var latestEnd: Double?
        public var latestStart: Double?
        /// Exact (integer micro-units); nil with more than one unit or no values.
        public var valueSum: Double?
        public var valueMax: Double?

        public static func fetch(_ db: Database, typeID: Int64, observationID obs: Int64) throws -> Totals {
            let r = try Row.fetchOne(db.cachedStatement(sql: """
                SELECT count(*) AS n, min(start_date) AS first, max(end_date) AS last, max(start_date) AS last_start,
                       \(exactSumSQL("")) AS total,
                       max(numeric_value) AS top
                FROM (\(visibleSQL))
                """), arguments: [typeID, obs, obs])!
            return Totals(count: r["n"], earliestStart: r["first"], latestEnd: r["last"], latestStart: r["last_start"],
                          valueSum: r["total"], valueMax: r["top"])
        }
    }

    /// True when a range of the type opened or closed in `(after, upTo]`.
    static func moved(_ db: Database, typeID: Int64, after: Int64, upTo: Int64) throws -> Bool {
        try Bool.fetchOne(db.cachedStatement(sql: """
            SELECT EXISTS (SELECT 1 FROM sample_visibility_ranges r CROSS JOIN samples s ON s.id = r.sample_id
                           WHERE r.first_observation_id > ? AND r.first_observation_id <= ? AND s.sample_type_id = ?)
                OR EXISTS (SELECT 1 FROM sample_visibility_ranges r CROSS JOIN samples s ON s.id = r.sample_id
                           WHERE r.last_observation_id > ? AND r.last_observation_id <= ? AND s.sample_type_id = ?)
            """), arguments: [after, upTo, typeID, after, upTo, typeID]) ?? true
    }

    /// Daily rows (per local day and source revision) of the type's visible samples.
    static func writeDaily(_ db: Database, obs: Int64, typeID: Int64, typeIdentifier: String, days: LocalDays, from: Double, to: Double) throws {
        try computeDaily(db, into: "daily_type_aggregates", obs: obs, typeID: typeID, days: days, from: from, to: to)
        try hashDaily(db, obs: obs, typeID: typeID, typeIdentifier: typeIdentifier)
    }

    /// Inserts the daily rows of the type's samples visible at `obs` (local days of
    /// `days` from the one holding `from` to the one holding `to`) into `table`, which
    /// has the columns of `daily_type_aggregates`; `aggregate_hash` is left null.
    static func computeDaily(_ db: Database, into table: String, obs: Int64, typeID: Int64, days: LocalDays, from: Double, to: Double) throws {
        try db.ensureTempTable(TempTable.days)
        try db.execute(sql: "DELETE FROM temp.hp_days")
        let insertDay = try db.cachedStatement(sql: "INSERT INTO temp.hp_days(bucket_start, bucket_end) VALUES (?, ?)")
        try days.forEachDay(from: from, to: to) { start, end in try insertDay.execute(arguments: [start, end]) }
        try withBoundedSorter(db) {
            try db.cachedStatement(sql: """
            INSERT INTO \(table)(observation_id, sample_type_id, bucket_start, bucket_end, visible_record_count,
                value_sum, value_max, source_revision_id, aggregate_hash)
            SELECT ?, ?, g.b, d.bucket_end, g.n, g.total, g.top, g.rev, NULL
            FROM (
                SELECT (SELECT max(x.bucket_start) FROM temp.hp_days x WHERE x.bucket_start <= vis.start_date) AS b,
                       vis.source_revision_id AS rev, count(*) AS n,
                       \(exactSumSQL("vis.")) AS total,
                       max(vis.numeric_value) AS top
                FROM (\(visibleSQL)) vis
                GROUP BY b, rev
            ) g JOIN temp.hp_days d ON d.bucket_start = g.b
            """).execute(arguments: [obs, typeID, typeID, obs, obs])
        }
        try db.execute(sql: "DELETE FROM temp.hp_days")
    }

    /// The most memory SQLite's sorter may hold for the daily grouping, in KiB.
    static let sorterKiB = 8 * 1024

    /// Runs `body` with the main page cache (which also sizes SQLite's
    /// in-memory sorter) at most `sorterKiB`: a type of a million samples
    /// otherwise sorts in up to another whole page cache of memory, on top of
    /// the cache itself. Larger sorts spill to temporary files.
    static func withBoundedSorter<T>(_ db: Database, _ body: () throws -> T) throws -> T {
        try db.withBoundedCache(kib: sorterKiB, body)
    }

    /// The daily rows of (obs, type) with what their hash covers (`onlyUnhashed`:
    /// those without a hash yet); arguments: obs, type.
    static func dailyRowsSQL(onlyUnhashed: Bool) -> String {
        """
        SELECT a.rowid AS rid, a.bucket_start, a.bucket_end, a.visible_record_count, a.value_sum, a.value_max,
               sr.product_type, sr.version, sr.operating_system_version, so.source_name_hash, so.bundle_identifier,
               a.source_revision_id IS NULL AS no_rev, a.source_revision_id, a.aggregate_hash
        FROM daily_type_aggregates a
        LEFT JOIN source_revisions sr ON sr.id = a.source_revision_id
        LEFT JOIN sources so ON so.id = sr.source_id
        WHERE a.observation_id = ? AND a.sample_type_id = ?\(onlyUnhashed ? " AND a.aggregate_hash IS NULL" : "")
        """
    }

    /// The aggregate hash of a daily row (a row of `dailyRowsSQL`), over content
    /// the same in every replica (no local ids).
    static func dailyHash(_ r: Row, typeIdentifier: String) throws -> String {
        var revision = JSONValue.null
        if !(r["no_rev"] as Bool) {
            var rev: [String: JSONValue] = [:]
            for key in ["bundle_identifier", "operating_system_version", "product_type", "version"] { rev[key] = .optional(r[key] as String?) }
            rev["name_hash"] = .optional(r["source_name_hash"] as String?)
            revision = .object(rev)
        }
        let start: Double = r["bucket_start"], end: Double = r["bucket_end"], count: Int = r["visible_record_count"]
        let sum: Double? = r["value_sum"], top: Double? = r["value_max"]
        var fields: [String: JSONValue] = [:]
        fields["kind"] = .string("daily")
        fields["type"] = .string(typeIdentifier)
        fields["bucket_start"] = .string(CanonicalDate.string(start))
        fields["bucket_end"] = .string(CanonicalDate.string(end))
        fields["visible_record_count"] = .int(count)
        fields["source_revision"] = revision
        fields["value_sum"] = sum.map(JSONValue.number) ?? .null
        fields["value_max"] = top.map(JSONValue.number) ?? .null
        return try ArchiveHasher.sha256(.aggregate, json: .object(fields))
    }

    /// Hashes the daily rows of (obs, type) that have no hash yet.
    static func hashDaily(_ db: Database, obs: Int64, typeID: Int64, typeIdentifier: String) throws {
        let rows = try Row.fetchAll(db.cachedStatement(sql: dailyRowsSQL(onlyUnhashed: true)), arguments: [obs, typeID])
        let setHash = try db.cachedStatement(sql: "UPDATE daily_type_aggregates SET aggregate_hash = ? WHERE rowid = ?")
        for r in rows {
            try setHash.execute(arguments: [try dailyHash(r, typeIdentifier: typeIdentifier), r["rid"] as Int64])
        }
    }

    /// Computes the aggregates of every type run of `observationID`.
    public static func update(_ db: Database, observationID obs: Int64, now: Double, allowDelta: Bool = true) throws {
        try update(db, observationID: obs, now: now, allowDelta: allowDelta, changes: nil, visible: [:])
    }

    /// The same, with what the caller counted as it wrote the observation: `changes`, when
    /// not nil, every type's change counts at `obs` (a type missing has none); `visible`,
    /// types' whole visible sets at `obs` summed (used as by `update(visible:)`). A bundle's
    /// applier (`BundleSums`).
    static func update(_ db: Database, observationID obs: Int64, now: Double, allowDelta: Bool = true,
                       changes: [Int64: ChangeCounts]?, visible: [Int64: Sweep]) throws {
        let types = try Int64.fetchAll(db.cachedStatement(sql: "SELECT DISTINCT sample_type_id FROM observation_type_runs WHERE observation_id = ? ORDER BY sample_type_id"), arguments: [obs])
        for t in types {
            var sweep = visible[t]
            try update(db, observationID: obs, typeID: t, now: now, allowDelta: allowDelta, changes: changes.map { $0[t] ?? ChangeCounts() }, visible: &sweep)
        }
    }

    /// Deletes every aggregate and recomputes them, observation by observation.
    /// The result equals what the incremental updates produced.
    public static func rebuildAll(_ db: Database, now: Double, allowDelta: Bool = true) throws {
        try db.execute(sql: "DELETE FROM daily_type_aggregates")
        try db.execute(sql: "DELETE FROM observation_type_summaries")
        let observations = try Int64.fetchAll(db, sql: "SELECT DISTINCT observation_id FROM observation_type_runs ORDER BY observation_id")
        for obs in observations { try update(db, observationID: obs, now: now, allowDelta: allowDelta) }
    }
}
