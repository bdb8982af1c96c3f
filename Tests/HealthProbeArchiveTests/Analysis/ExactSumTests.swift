import Foundation
import GRDB
import Testing
@testable import HealthProbeArchive
import HealthProbeTestSupport

@Suite("Exact sums: absent beyond 64-bit micro-units, never an error")
struct ExactSumTests {
    /// `hp_exact_micro_sum` over `values` in the order given (a table's rowid order), on an archive's connection.
    static func sqlSum(_ values: [Double?]) throws -> Int64? {
        let archive = try Archive.inMemory()
        return try archive.writer.write { db in
            try db.execute(sql: "CREATE TEMP TABLE t(x REAL)")
            for v in values { try db.execute(sql: "INSERT INTO t(x) VALUES (?)", arguments: [v]) }
            return try Int64.fetchOne(db, sql: "SELECT \(ExactSumFunction.name)(x) FROM t")
        }
    }

    static func swiftSum(_ values: [Double?]) -> Int64? {
        var s = ExactMicroSum()
        for v in values.compactMap({ $0 }) { s.add(Aggregates.micro(v)) }
        return values.contains { $0 != nil } ? s.value : nil
    }

    @Test("SQL and Swift agree in every order: exact where SQLite's sum is, exact where only a partial sum passes 64 bits, absent where the sum or a value does")
    func sameOnBothSides() throws {
        let cases: [(values: [Double?], expected: Int64?)] = [
            ([1.5, 2.25, nil, -0.75], 3_000_000),
            ([0.0000005, 0.0000005], 2),  // each rounds half away from zero
            ([-0.0000005], -1),
            ([], nil), ([nil, nil], nil),
            ([9e12, 9e12, -9e12], 9_000_000_000_000_000_000),  // a partial sum passes 2^63, the sum does not
            ([5e12, 5e12], nil),  // the sum passes 2^63
            ([1e300, -1e300], nil),  // values beyond
            ([-9.2e12, -9.2e12], nil),
            ([-9e12, -9e12, 9e12], -9_000_000_000_000_000_000),  // a partial sum passes -2^63, the sum does not
            ([-9223372036854.775808], Int64.min), ([9223372036854.775807], nil),  // -2^63 is in range; the double nearest 2^63 - 1 is 2^63
        ]
        for (values, expected) in cases {
            for order in [values, values.reversed(), values.sorted { ($0 ?? 0) < ($1 ?? 0) }] {
                #expect(try Self.sqlSum(order) == expected, "SQL over \(order)")
                #expect(Self.swiftSum(order) == expected, "Swift over \(order)")
            }
        }
        // SQLite's own sum fails the statement where the partial sum passes 2^63.
        let archive = try Archive.inMemory()
        #expect(throws: DatabaseError.self) {
            try archive.writer.read { db in try Int64.fetchOne(db, sql: "SELECT sum(CAST(round(x * 1e6) AS INTEGER)) FROM (SELECT 9e12 AS x UNION ALL SELECT 9e12 UNION ALL SELECT -9e12)") }
        }
    }

    @Test("Swift's sum counts its wraps both ways: past 2^63 and -2^63 and back, Int64.min subtracted and added")
    func wraps() {
        var s = ExactMicroSum(.max)
        s.add(1)
        #expect(s.value == nil)
        s.subtract(1)
        #expect(s.value == .max)
        var m = ExactMicroSum(.min)
        m.subtract(1)
        #expect(m.value == nil)
        m.add(1)
        #expect(m.value == .min)
        var z = ExactMicroSum(0)
        z.subtract(.min)  // 2^63
        #expect(z.value == nil)
        z.add(.min)
        #expect(z.value == 0)
        var a = ExactMicroSum(.max), b = ExactMicroSum(.max)
        a.add(b)  // 2^64 - 2
        #expect(a.value == nil)
        b.subtract(.max)
        b.subtract(.max)  // -(2^63 - 1)
        a.add(b)  // 2^63 - 1
        #expect(a.value == .max)
        var beyond = ExactMicroSum(nil)
        beyond.add(1)
        #expect(beyond.value == nil)
    }

    @Test("a first capture whose type sum fits but one day's does not: the day's sum absent, the type's exact, as a recount gives them")
    func oneDayBeyondFromTheStart() throws {
        let t = TempHome()
        let node = try t.open()
        let (obs, r) = try capture(node, samples: [hr(0, value: 5e12), hr(1, value: 5e12), hr(400, value: -5e12)])
        #expect(r.status == .completed)
        let (total, days) = try node.archive.writer.read { db in
            (try Double.fetchOne(db, sql: "SELECT value_sum FROM observation_type_summaries WHERE observation_id = ?", arguments: [obs]),
             try Double?.fetchAll(db, sql: "SELECT value_sum FROM daily_type_aggregates WHERE observation_id = ? ORDER BY bucket_start", arguments: [obs]))
        }
        #expect(total == 5e12)
        #expect(days == [nil, -5e12])
        let report = try ArchiveVerifier.run(node, mode: .full)
        #expect(report.ok, "\(report.checks.filter { $0.status == .problem })")
    }

    @Test("a large value that disappears from a sum past what a double gives back exactly: the sum is recounted, not continued from the stored double")
    func storedSumPastADouble() throws {
        let t = TempHome()
        let node = try t.open()
        // The large sample is at neither end in time, so its range closing leaves the extremes to the shortcut.
        let samples = [hr(0, value: 60), hr(1, value: 4e12), hr(2, value: 60), hr(3, value: 60)]
        try capture(node, samples: samples)
        t.clock.advance(3600)
        let (obs, _) = try capture(node, samples: samples.filter { $0.numericValue != 4e12 })
        let total = try node.archive.writer.read { db in
            try Double.fetchOne(db, sql: "SELECT value_sum FROM observation_type_summaries WHERE observation_id = ?", arguments: [obs])
        }
        #expect(total == 180)
        let report = try ArchiveVerifier.run(node, mode: .full)
        #expect(report.ok, "\(report.checks.filter { $0.status == .problem })")
    }

    @Test("captures of values whose sum passes 64-bit micro-units complete: the sum absent while it does, exact again once it does not; the archive verifies, and a replica of it holds the same aggregates",
          arguments: [4e12, 1e300])
    func captureBeyondAndBack(value: Double) throws {
        let t = TempHome()
        let node = try t.open()
        func sum(_ obs: Int64) throws -> Double? {
            try node.archive.writer.read { db in
                try Double.fetchOne(db, sql: "SELECT value_sum FROM observation_type_summaries WHERE observation_id = ?", arguments: [obs])
            }
        }
        func captured(_ samples: [CapturedSample]) throws -> Int64 {
            let (obs, r) = try capture(node, samples: samples)
            #expect(r.status == .completed)
            t.clock.advance(3600)
            return obs
        }
        let small = (10..<13).map { hr($0, value: 60) }
        let first = try captured((0..<3).map { hr($0, value: value) } + small)
        #expect(try sum(first) == nil)
        // A changed value and a new sample: still beyond.
        let changed = try captured([hr(0, value: value / 2)] + (1..<4).map { hr($0, value: value) } + small)
        #expect(try sum(changed) == nil)
        // The large values but one disappear: exact again (below 2^63 micro-units with 4e12).
        let back = try captured([hr(3, value: value)] + small)
        // In micro-units past 2^53 the stored total is as near as a double gets.
        let exact = try sum(back)
        if value == 4e12 { #expect(exact.map { abs($0 - (value + 180)) < 0.01 } == true, "\(exact.map { "\($0)" } ?? "absent")") } else { #expect(exact == nil) }
        let gone = try captured(small)
        #expect(try sum(gone) == 180)
        // Two days whose sums cancel out, then one more value on the first: the type's sum is
        // exact, the first day's passes 64 bits (absent there, as recounted).
        let split = [hr(0, value: 5e12), hr(400, value: -5e12)]
        let cancelled = try captured(split)
        #expect(try sum(cancelled) == 0)
        let oneDay = try captured(split + [hr(1, value: 5e12)])
        #expect(try sum(oneDay) == 5e12)
        let days = try node.archive.writer.read { db in
            try Double?.fetchAll(db, sql: "SELECT value_sum FROM daily_type_aggregates WHERE observation_id = ? ORDER BY bucket_start", arguments: [oneDay])
        }
        #expect(days == [nil, -5e12])
        let report = try ArchiveVerifier.run(node, mode: .full)
        #expect(report.ok, "\(report.checks.filter { $0.status == .problem })")
        // The same history applied to a replica: the same aggregates (values, sums absent or not, hashes).
        let dir = TempDir()
        let replica = try newReplica(in: dir)
        var previous: String?
        for obs in [first, changed, back, gone, cancelled, oneDay] {
            let (lines, hash) = try bundleLines(node, obs, previous: previous)
            #expect(try BundleApplier.apply(replica, lines: lines, manifestHash: hash, now: 1) == .applied(observationID: obs, sequence: Int(obs)))
            previous = hash
        }
        func hashes(_ a: Archive) throws -> [String?] {
            try a.writer.read { db in try String?.fetchAll(db, sql: "SELECT aggregate_hash FROM observation_type_summaries ORDER BY observation_id") }
        }
        #expect(try hashes(node.archive) == (try hashes(replica)))
        #expect(try hashes(replica).count == 6)
        let same = try node.archive.writer.read(BundleSumsTests.aggregates) == (try replica.writer.read(BundleSumsTests.aggregates))
        #expect(same, "the replica's aggregates differ from the node's")
    }
}
