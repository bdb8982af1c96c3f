import GRDB
import HealthProbeTestSupport
import Testing
@testable import HealthProbeArchive

/// `RangeRebuild` (the walk that replaced the range check's SQL window and `EXCEPT`s)
/// finds exactly what that SQL finds, on simulated archives with edits, deletions and
/// reappearances, each damaged at random.
@Suite("Range rebuild")
struct RangeRebuildTests {
    /// One difference: the sample, the range's bounds, and which side lacks it.
    struct Difference: Hashable, CustomStringConvertible {
        var sample: Int64
        var first: Int64
        var last: Int64?
        var storedOnly: Bool
        var description: String { "sample \(sample) [\(first), \(last.map(String.init) ?? "open")) \(storedOnly ? "stored only" : "derived only")" }
    }

    /// The SQL the walk replaced (ArchiveVerifier check 6 before 8c6f4ac, 2026-11-25), every difference.
    static func oracle(_ db: Database) throws -> Set<Difference> {
        let rows = try Row.fetchAll(db, sql: """
            WITH ev AS (
                SELECT sample_id, observation_id, version_id, event_kind,
                       lead(observation_id) OVER (PARTITION BY sample_id ORDER BY observation_id, event_kind = \(EventKind.appeared.sql), id) AS next_obs
                FROM sample_observation_events
                WHERE event_kind IN \(EventKind.rangeKindsSQL)
            ), rebuilt AS (
                SELECT sample_id, version_id, observation_id AS first_observation_id, next_obs AS last_observation_id
                FROM ev WHERE event_kind IN (\(EventKind.appeared.sql), \(EventKind.representationChanged.sql))
            ), stored AS (
                SELECT sample_id, version_id, first_observation_id, last_observation_id FROM sample_visibility_ranges
            )
            SELECT 1, * FROM (SELECT * FROM stored EXCEPT SELECT * FROM rebuilt)
            UNION ALL
            SELECT 0, * FROM (SELECT * FROM rebuilt EXCEPT SELECT * FROM stored)
            """)
        return Set(rows.map { Difference(sample: $0[1], first: $0[3], last: $0[4], storedOnly: ($0[0] as Int) == 1) })
    }

    /// What the walk reports over every sample, read back from its messages.
    static func walk(_ db: Database) throws -> Set<Difference> {
        let found = try RangeRebuild.compare(db, events: FastStatement(db, RangeRebuild.allEvents),
                                             stored: FastStatement(db, RangeRebuild.allRanges), arguments: [], limit: .max).ranges
        return Set(try found.map { message in
            // "sample N: the range [A, B) is stored but not derived from the events"
            let numbers = message.split(whereSeparator: { !$0.isNumber }).compactMap { Int64($0) }
            let open = message.contains(", open)")
            try #require(numbers.count == (open ? 2 : 3), "\(message)")
            return Difference(sample: numbers[0], first: numbers[1], last: open ? nil : numbers[2], storedOnly: message.contains("is stored but not derived"))
        })
    }

    /// Damage a random handful of ranges and events (rows picked by `rng`, so a seed replays).
    static func damage(_ db: Database, _ rng: inout TestRandom) throws {
        let maxObs = try Int64.fetchOne(db, sql: "SELECT max(id) FROM observations") ?? 1
        func pick(_ table: String, _ filter: String = "1") throws -> Int64? {
            let n = try Int.fetchOne(db, sql: "SELECT count(*) FROM \(table) WHERE \(filter)") ?? 0
            guard n > 0 else { return nil }
            return try Int64.fetchOne(db, sql: "SELECT rowid FROM \(table) WHERE \(filter) ORDER BY rowid LIMIT 1 OFFSET ?", arguments: [Int.random(in: 0..<n, using: &rng)])
        }
        for _ in 0..<Int.random(in: 1...6, using: &rng) {
            let obs = Int64.random(in: 1...maxObs, using: &rng)
            switch Int.random(in: 0..<6, using: &rng) {
            case 0: try db.execute(sql: "DELETE FROM sample_visibility_ranges WHERE rowid = ?", arguments: [try pick("sample_visibility_ranges")])
            case 1: try db.execute(sql: "UPDATE sample_visibility_ranges SET last_observation_id = ? WHERE rowid = ?", arguments: [obs, try pick("sample_visibility_ranges")])
            case 2: try db.execute(sql: "UPDATE sample_visibility_ranges SET last_observation_id = NULL WHERE rowid = ?",
                                   arguments: [try pick("sample_visibility_ranges", "last_observation_id IS NOT NULL")])
            case 3: try db.execute(sql: "UPDATE sample_visibility_ranges SET version_id = NULL WHERE rowid = ?", arguments: [try pick("sample_visibility_ranges")])
            case 4: try db.execute(sql: "DELETE FROM sample_observation_events WHERE id = ?", arguments: [try pick("sample_observation_events")])
            default:
                try db.execute(sql: """
                    UPDATE OR IGNORE sample_observation_events SET event_kind = CASE event_kind WHEN \(EventKind.appeared.sql) THEN \(EventKind.disappeared.sql) ELSE \(EventKind.appeared.sql) END
                    WHERE id = ?
                    """, arguments: [try pick("sample_observation_events")])
            }
        }
    }

    @Test("the walk finds what the SQL found: nothing on real archives, the same differences after random damage", arguments: [UInt64(5), 6, 7])
    func matchesTheSQL(seed: UInt64) throws {
        let home = TempHome()
        try home.simulate(seed: seed, days: [3, 1, 2, 1, 1])
        let node = try home.open()
        var rng = TestRandom(printingSeedFor: "matchesTheSQL \(seed)")
        try node.archive.writer.write { db in
            let kinds = try Int.fetchOne(db, sql: "SELECT count(DISTINCT event_kind) FROM sample_observation_events WHERE event_kind IN \(EventKind.rangeKindsSQL)")
            #expect(kinds == 3, "the simulated history should hold every kind of event")
            #expect(try Self.walk(db).isEmpty)
            #expect(try Self.oracle(db).isEmpty)
            try db.execute(sql: "PRAGMA foreign_keys = OFF")
            var found = 0
            for _ in 0..<12 {
                _ = try db.inSavepoint {
                    try Self.damage(db, &rng)
                    let (walked, expected) = (try Self.walk(db), try Self.oracle(db))
                    #expect(walked == expected, "seed \(rng.seed): walk \(walked.sorted { $0.description < $1.description }), SQL \(expected.sorted { $0.description < $1.description })")
                    found += expected.count
                    return .rollback
                }
            }
            #expect(found > 0)
        }
    }

    @Test("a sample that disappears and appears again in one observation closes its range there and opens another, whatever order its events were written in")
    func reappearsInOneObservation() throws {
        let home = TempHome()
        try home.simulate(seed: 5, days: [2, 1])
        let node = try home.open()
        try node.archive.writer.write { db in
            try db.execute(sql: "PRAGMA foreign_keys = OFF")
            let last = try Int64.fetchOne(db, sql: "SELECT max(id) FROM observations")!
            let r = try #require(try Row.fetchOne(db, sql: """
                SELECT g.rowid, g.sample_id, g.version_id FROM sample_visibility_ranges g
                WHERE g.last_observation_id IS NULL AND g.first_observation_id < ?1
                  AND NOT EXISTS (SELECT 1 FROM sample_observation_events e WHERE e.sample_id = g.sample_id AND e.observation_id = ?1)
                LIMIT 1
                """, arguments: [last]))
            let (rowid, sample, version) = (r[0] as Int64, r[1] as Int64, r[2] as Int64?)
            for appearedFirst in [true, false] {
                _ = try db.inSavepoint {
                    // The events as a capture could write them: either kind first (ids in that order).
                    for kind in appearedFirst ? [EventKind.appeared.code, EventKind.disappeared.code] : [EventKind.disappeared.code, EventKind.appeared.code] {
                        try db.execute(sql: "INSERT INTO sample_observation_events(observation_id, sample_id, version_id, event_kind, observed_at) VALUES (?, ?, ?, ?, 0)",
                                       arguments: [last, sample, version, kind])
                    }
                    try db.execute(sql: "UPDATE sample_visibility_ranges SET last_observation_id = ? WHERE rowid = ?", arguments: [last, rowid])
                    try db.execute(sql: "INSERT INTO sample_visibility_ranges(sample_id, version_id, first_observation_id, first_seen_at) VALUES (?, ?, ?, 0)",
                                   arguments: [sample, version, last])
                    #expect(try Self.oracle(db).isEmpty, "appeared first: \(appearedFirst)")
                    #expect(try Self.walk(db).isEmpty, "appeared first: \(appearedFirst)")
                    // Without the new range both name it as derived and not stored.
                    try db.execute(sql: "DELETE FROM sample_visibility_ranges WHERE sample_id = ? AND first_observation_id = ?", arguments: [sample, last])
                    let expected = Difference(sample: sample, first: last, last: nil, storedOnly: false)
                    #expect(try Self.oracle(db) == [expected])
                    #expect(try Self.walk(db) == [expected], "appeared first: \(appearedFirst)")
                    return .rollback
                }
            }
        }
    }
}
