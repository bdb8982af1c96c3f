import Foundation
import GRDB
import Testing
@testable import HealthProbeArchive
import HealthProbeCanonical
@testable import HealthProbeSimulator
import HealthProbeTestSupport

/// Bundles whose hashes are all valid but whose content is not: each is refused
/// with the check that catches it, nothing of it is stored, and the replica then
/// takes the real bundle and passes every integrity check.
@Suite("Bundle meaning")
struct BundleMeaningTests {
    typealias Object = [String: JSONValue]

    /// One hostile change to one item of a real bundle.
    struct Case: Sendable {
        let name: String
        /// Which bundle: the chain's first, or the first that closes a range.
        let closing: Bool
        let kind: String
        let matches: @Sendable (Object) -> Bool
        /// What replaces the item.
        let change: @Sendable (Object) -> [Object]
        /// The refusal's code (`BundleError` or `BundleApplier.ApplyError`).
        let code: String

        init(_ name: String, closing: Bool = false, _ kind: String, where matches: @escaping @Sendable (Object) -> Bool = { _ in true },
             _ code: String, _ change: @escaping @Sendable (Object) -> [Object]) {
            self.name = name
            self.closing = closing
            self.kind = kind
            self.matches = matches
            self.change = change
            self.code = code
        }
    }

    static func set(_ o: Object, _ key: String, _ value: JSONValue?) -> [Object] {
        var o = o
        o[key] = value
        return [o]
    }

    static func setIn(_ o: Object, _ outer: String, _ key: String, _ value: JSONValue) -> [Object] {
        var o = o
        guard case .object(var inner)? = o[outer] else { return [o] }
        inner[key] = value
        o[outer] = .object(inner)
        return [o]
    }

    static let cases: [Case] = [
        Case("unknown event_kind", "event", "field") { set($0, "event_kind", .string("vanished")) },
        Case("unknown evidence_kind", "event", "field") { set($0, "evidence_kind", .string("rumour")) },
        Case("unknown trigger_reason", "observation", "field") { set($0, "trigger_reason", .string("whim")) },
        Case("unknown run_kind", "type_run", "field") { set($0, "run_kind", .string("sometimes")) },
        Case("unknown type run status", "type_run", "field") { set($0, "status", .string("done")) },
        Case("unknown value_kind", "version", "field") { setIn($0, "payload", "value_kind", .string("vibes")) },
        Case("an extra member", "sample", "field") { set($0, "extra", .int(1)) },
        Case("a missing member", "sample", "field") { set($0, "fuzzy_key", nil) },
        Case("a missing payload member", "version", "field") { o in
            var o = o
            if case .object(var p)? = o["payload"] { p["unit"] = nil; o["payload"] = .object(p) }
            return [o]
        },
        Case("no observation item", "observation", "order") { _ in [] },
        Case("a count of 1e300", "type_run", "field") { set($0, "inserted_event_count", .number(1e300)) },
        Case("a count of 2^63", "type_run", "field") { set($0, "deleted_event_count", .number(9_223_372_036_854_775_808)) },
        Case("a negative count", "type_run", "field") { set($0, "rejected_record_count", .int(-1)) },
        Case("a fractional count", "type_run", "field") { set($0, "inserted_event_count", .number(1.5)) },
        Case("a payload integer of 2^63", "version", "field") { setIn($0, "payload", "category_value", .number(9_223_372_036_854_775_808)) },
        Case("a year-9999 date", "sample", "field") { set($0, "first_seen_at", .string("9999-01-01T00:00:00.000Z")) },
        Case("a date without milliseconds", "sample", "field") { set($0, "first_seen_at", .string("2025-01-07T06:00:00Z")) },
        Case("February 30", "event", "field") { set($0, "observed_at", .string("2025-02-30T00:00:00.000Z")) },
        Case("a time zone offset of 100 hours", "observation", "field") { set($0, "time_zone_seconds_from_gmt", .int(360_000)) },
        Case("an upper-case hash", "sample", "field") { o in
            guard case .string(let fp)? = o["strict_fingerprint"] else { return [o] }
            return set(o, "strict_fingerprint", .string(fp.uppercased()))
        },
        Case("a string 2,000 bytes long", "sample_type", "field") { set($0, "display_name", .string(String(repeating: "x", count: 2000))) },
        Case("an object where text goes", "source", "field") { set($0, "bundle_identifier", .object([:])) },
        Case("a payload of another type", "version", "field") { setIn($0, "payload", "type", .string("HKQuantityTypeIdentifierOther")) },
        Case("an appearance without a payload hash", "event", where: { $0["event_kind"] == .string("appeared") }, "field") {
            set($0, "payload_hash", .null)
        },
        Case("an error kind on a completed run", "type_run", where: { $0["status"] == .string("completed") }, "field") {
            set($0, "error_kind", .string("query_failed"))
        },
        Case("a range that opens without its event", "range_open", "replica_check") { _ in [] },
        // An event dropped changes its run's count: the bundle contradicts itself (section 4.5).
        Case("an event without its range", "event", where: { $0["event_kind"] == .string("appeared") }, "inconsistent") { _ in [] },
        Case("a verified visible count off by one", "type_run", where: { if case .number = $0["verified_visible_count"] { return true }; return false },
             "replica_check") { o in
            guard case .number(let n)? = o["verified_visible_count"] else { return [o] }
            return set(o, "verified_visible_count", .number(n + 1))
        },
        Case("a sample sent twice", "sample", "reference") { [$0, $0] },
        Case("an event naming a payload nobody sent", "event", "unresolved") { set($0, "payload_hash", .string(String(repeating: "0", count: 64))) },
        Case("a version naming a device nobody sent", "device", "unresolved") { _ in [] },
        Case("a range closed by an observation that is not earlier", closing: true, "range_close", "field") { o in
            set(o, "first_sequence", .int(99))
        },
        Case("a range closed from sequence 1e300", closing: true, "range_close", "field") { set($0, "first_sequence", .number(1e300)) },
        Case("a disappearance without its event", closing: true, "event", where: { $0["event_kind"] == .string("disappeared") }, "inconsistent") { _ in [] },
        Case("a closed range without its disappearance", closing: true, "range_close", "replica_check") { _ in [] },
        // Rules between items (Protocol/bundles.md section 4.5) and against the replica (section 5.2).
        Case("a sample whose type has no sample_type item", "sample_type", "inconsistent") { _ in [] },
        Case("a type named twice", "sample_type", "order") { [$0, $0] },
        Case("an event observed at another instant", "event", "inconsistent") { set($0, "observed_at", .string("2020-01-01T00:00:00.000Z")) },
        Case("a sample first seen at another instant", "sample", "inconsistent") { set($0, "first_seen_at", .string("2020-01-01T00:00:00.000Z")) },
        Case("a range opened at another instant", "range_open", "inconsistent") { set($0, "first_seen_at", .string("2020-01-01T00:00:00.000Z")) },
        Case("a run counting an event more than its type has", "type_run", "inconsistent") { o in
            guard case .number(let n)? = o["inserted_event_count"] else { return [o] }
            return set(o, "inserted_event_count", .number(n + 1))
        },
        Case("a run deleting an event its type does not have", "type_run", "inconsistent") { o in
            guard case .number(let n)? = o["deleted_event_count"] else { return [o] }
            return set(o, "deleted_event_count", .number(n + 1))
        },
        Case("a completed run without its visible count", "type_run", where: { $0["status"] == .string("completed") }, "field") {
            set($0, "verified_visible_count", .null)
        },
        Case("a failed run with a visible count", "type_run", where: { $0["status"] == .string("completed") }, "field") { o in
            var o = o
            o["status"] = .string("failed")
            o["error_kind"] = .string("query_failed")
            return [o]
        },
        Case("a failed run in a completed observation", "type_run", where: { $0["status"] == .string("completed") }, "inconsistent") { o in
            var o = o
            o["status"] = .string("failed")
            o["error_kind"] = .string("query_failed")
            o["verified_visible_count"] = .null
            return [o]
        },
        Case("events of an unauthorized run", "type_run", where: { $0["inserted_event_count"] != .number(0) }, "inconsistent") { o in
            var o = o
            o["status"] = .string("unauthorized")
            o["error_kind"] = .string("authorization_denied")
            o["verified_visible_count"] = .null
            return [o]
        },
        Case("a category its values contradict", "sample_type", where: { $0["category"] == .string("quantity") }, "inconsistent") {
            set($0, "category", .string("workout"))
        },
        Case("a range closed twice", closing: true, "range_close", "reference") { [$0, $0] },
        Case("a range closed before it opened", closing: true, "range_close", "inconsistent") {
            set($0, "last_seen_at", .string("2000-01-01T00:00:00.000Z"))
        },
        Case("a range closed after its observation", closing: true, "range_close", "inconsistent") {
            set($0, "last_seen_at", .string("2199-01-01T00:00:00.000Z"))
        },
    ]

    /// The node's bundles, in sequence order.
    static func chain() throws -> (TempHome, [([[UInt8]], String)]) {
        let t = TempHome()
        var o = SimulatorCapture.Options()
        o.seed = 9
        o.types = [SimulatedType.all[2], SimulatedType.all[8], SimulatedType.all[15]]
        o.days = 6
        _ = try SimulatorCapture.run(home: t.home, options: o)
        o.days = 2
        for _ in 0..<3 { _ = try SimulatorCapture.run(home: t.home, options: o) }
        let node = try t.open()
        let count = try node.archive.writer.read { db in try Int64.fetchOne(db, sql: "SELECT count(*) FROM observations") ?? 0 }
        var bundles: [([[UInt8]], String)] = []
        var previous: String?
        for obs in 1...max(count, 1) {
            let b = try bundleLines(node, obs, previous: previous)
            bundles.append(b)
            previous = b.1
        }
        return (t, bundles)
    }

    static func code(_ error: any Error) -> String {
        if let e = error as? BundleError { return e.code.rawValue }
        if let e = error as? BundleApplier.ApplyError { return e.code.rawValue }
        return "\(type(of: error))"
    }

    /// The line a refusal names (nil: none).
    static func line(_ error: any Error) -> Int? {
        (error as? BundleError)?.line ?? (error as? BundleApplier.ApplyError)?.line
    }

    static func counts(_ replica: Archive) throws -> [Int] {
        try replica.writer.read { db in
            try ["observations", "bundle_log", "samples", "sample_versions", "sample_observation_events", "sample_visibility_ranges"].map {
                try Int.fetchOne(db, sql: "SELECT count(*) FROM \($0)") ?? 0
            }
        }
    }

    /// The replica's indexes by name, with the SQL that made them (nil: a constraint's).
    static func indexes(_ replica: Archive) throws -> [String: String] {
        try replica.writer.read { db in
            var all: [String: String] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT name, ifnull(sql, '') AS sql FROM sqlite_schema WHERE type = 'index'") { all[row["name"]] = row["sql"] }
            return all
        }
    }

    @Test("each hostile item is refused with the check that catches it; nothing is stored; the real bundle is then applied and the replica passes --full",
          arguments: [BundleApplier.IndexMode.maintained, .deferred])
    func hostileItems(indexes: BundleApplier.IndexMode) throws {
        let (home, bundles) = try Self.chain()
        defer { withExtendedLifetime(home) {} }
        let closing = try #require(bundles.firstIndex { lines in
            let text = lines.0.map { String(decoding: $0, as: UTF8.self) }
            return text.contains { $0.contains("\"kind\":\"range_close\"") } && text.contains { $0.contains("\"event_kind\":\"disappeared\"") }
        }, "the simulated chain has a disappearance")
        // One replica per bundle changed, refusing every case in turn: each refusal must leave
        // it as it was, so the cases after it, and the real bundle at the end, meet the same replica.
        for target in [0, closing] {
            let dir = TempDir()
            let replica = try newReplica(in: dir)
            for b in bundles[..<target] { _ = try BundleApplier.apply(replica, lines: b.0, manifestHash: b.1, now: 1) }
            let before = try Self.counts(replica), indexesBefore = try Self.indexes(replica)
            for c in Self.cases where (c.closing ? closing : 0) == target {
                var done = false
                let (lines, hash) = try editedBundle(bundles[target].0) { _, o in
                    guard !done, o["kind"] == .string(c.kind), c.matches(o) else { return [o] }
                    done = true
                    return c.change(o)
                }
                #expect(done, "\(c.name): the bundle has no item to change")
                do {
                    _ = try BundleApplier.apply(replica, lines: lines, manifestHash: hash, now: 1, indexes: indexes)
                    Issue.record("\(c.name): applied")
                } catch {
                    #expect(Self.code(error) == c.code, "\(c.name): \(error)")
                }
                #expect(try Self.counts(replica) == before, "\(c.name): something was stored")
                #expect(try Self.indexes(replica) == indexesBefore, "\(c.name): the refusal left the indexes changed")
            }
            let outcome = try BundleApplier.apply(replica, lines: bundles[target].0, manifestHash: bundles[target].1, now: 1, indexes: indexes)
            #expect(outcome == .applied(observationID: Int64(target + 1), sequence: target + 1), "bundle \(target + 1) after the refusals")
            let problems = try ArchiveVerifier.databaseChecks(replica, mode: .full).filter { $0.status == .problem }
            #expect(problems.isEmpty, "bundle \(target + 1) after the refusals: \(problems)")
        }
    }

    @Test("a sample the replica holds from an earlier bundle is refused as reference, naming the item and the rule, never SQLite's text",
          arguments: [BundleApplier.IndexMode.maintained, .deferred])
    func sampleHeldBefore(indexes: BundleApplier.IndexMode) throws {
        let (home, bundles) = try Self.chain()
        defer { withExtendedLifetime(home) {} }
        guard case .object(let observation) = try JSONParser.parse(bundles[1].0[1]), case .object(var held) = try JSONParser.parse(
            try #require(bundles[0].0.first { String(decoding: $0, as: UTF8.self).contains("\"kind\":\"sample\"") })) else {
            Issue.record("no observation or sample"); return
        }
        // Dated as bundle 2's own samples are (section 4.5), so only the replica tells.
        held["first_seen_at"] = observation["observed_at"]
        var added = false
        let (lines, hash) = try editedBundle(bundles[1].0) { _, o in
            guard !added, o["kind"] == .string("sample") else { return [o] }
            added = true
            return [held, o]
        }
        let dir = TempDir()
        let replica = try newReplica(in: dir)
        _ = try BundleApplier.apply(replica, lines: bundles[0].0, manifestHash: bundles[0].1, now: 1)
        do {
            _ = try BundleApplier.apply(replica, lines: lines, manifestHash: hash, now: 1, indexes: indexes)
            Issue.record("applied")
        } catch {
            #expect(Self.code(error) == "reference", "\(error)")
            let text = "\(error)"
            #expect(!text.contains("constraint") && !text.contains("UNIQUE") && !text.contains("sqlite"), "\(text)")
            #expect(text.contains("sample"), "\(text)")
            if indexes == .maintained { #expect(Self.line(error) != nil, "\(text)") }
        }
        #expect(try BundleApplier.apply(replica, lines: bundles[1].0, manifestHash: bundles[1].1, now: 1, indexes: indexes) == .applied(observationID: 2, sequence: 2))
    }

    @Test("an event naming another sample with the version the applier guesses next is refused as unresolved, in memory and past it: a version is its sample's and its whole payload hash's",
          arguments: [100_000, 0])
    func eventNamingAnotherSamplesVersion(remembered: Int) throws {
        let (home, bundles) = try Self.chain()
        defer { withExtendedLifetime(home) {} }
        var events: [Object] = []
        for line in bundles[0].0 {
            if case .object(let o) = try JSONParser.parse(line), o["kind"] == .string("event") { events.append(o) }
        }
        try #require(events.count > 3 && events[1]["sample"] != events[2]["sample"] && events[1]["payload_hash"] != .null)
        // The second event names the third's sample, keeping its own payload hash: the version
        // guessed after the first event's is the second's own, of another sample.
        var seen = 0
        let (lines, hash) = try editedBundle(bundles[0].0) { _, o in
            guard o["kind"] == .string("event") else { return [o] }
            defer { seen += 1 }
            guard seen == 1 else { return [o] }
            var changed = o
            changed["sample"] = events[2]["sample"]
            return [changed]
        }
        let dir = TempDir()
        let replica = try newReplica(in: dir)
        do {
            _ = try BundleApplier.apply(replica, lines: lines, manifestHash: hash, now: 1, remembered: remembered)
            Issue.record("applied")
        } catch {
            #expect(Self.code(error) == "unresolved", "\(error)")
        }
        #expect(try Self.counts(replica) == [0, 0, 0, 0, 0, 0])
        #expect(try BundleApplier.apply(replica, lines: bundles[0].0, manifestHash: bundles[0].1, now: 1, remembered: remembered) == .applied(observationID: 1, sequence: 1))
    }

    @Test("a header with a sequence or id no integer holds, or a broken chain link, is malformed: no trap, nothing stored")
    func hostileHeaders() throws {
        let (home, bundles) = try Self.chain()
        defer { withExtendedLifetime(home) {} }
        guard case .object(let header) = try JSONParser.parse(bundles[0].0[0]) else { Issue.record("no header"); return }
        let changes: [(String, JSONValue)] = [
            ("sequence", .number(9_223_372_036_854_775_808)), ("sequence", .number(1e300)), ("sequence", .number(1.5)), ("sequence", .int(0)),
            ("observation_id", .number(1e300)), ("observation_id", .int(-1)),
            ("previous_manifest_hash", .string(String(repeating: "a", count: 64))),
            ("device_chain_hash", .string(String(repeating: "A", count: 64))), ("device_chain_hash", .string("abc")),
        ]
        for (key, value) in changes {
            var h = header
            h[key] = value
            let (lines, hash) = try rebundle(header: try CanonicalJSON.encode(.object(h)), items: Array(bundles[0].0.dropFirst().dropLast()))
            var verifier = BundleVerifier()
            #expect(throws: BundleError.self, "\(key) = \(value)") { for l in lines { try verifier.feed(l) } }
            let dir = TempDir()
            let replica = try Archive.open(path: dir.file("replica.sqlite"))
            #expect(throws: BundleError.self, "\(key) = \(value)") { _ = try BundleApplier.apply(replica, lines: lines, manifestHash: hash, now: 1) }
            #expect(try Self.counts(replica) == [0, 0, 0, 0, 0, 0])
        }
    }

    @Test("text limits count the value's UTF-8 bytes, not its escapes: 600 quotes (1,200 bytes of JSON) fit 1,024; 1,025 bytes do not")
    func textLimitCountsValueBytes() throws {
        let (home, bundles) = try Self.chain()
        defer { withExtendedLifetime(home) {} }
        for (name, expectApplied) in [(String(repeating: "\"", count: 600), true), (String(repeating: "é", count: 512) + "x", false)] {
            var done = false
            let (lines, hash) = try editedBundle(bundles[0].0) { _, o in
                guard !done, o["kind"] == .string("sample_type") else { return [o] }
                done = true
                return Self.set(o, "display_name", .string(name))
            }
            let dir = TempDir()
            let replica = try Archive.open(path: dir.file("replica.sqlite"))
            if expectApplied {
                #expect(try BundleApplier.apply(replica, lines: lines, manifestHash: hash, now: 1) == .applied(observationID: 1, sequence: 1))
            } else {
                #expect { _ = try BundleApplier.apply(replica, lines: lines, manifestHash: hash, now: 1) } throws: { Self.code($0) == "field" }
            }
        }
    }

    @Test("the real chain passes: every bundle is applied and the replica passes --full")
    func realChain() throws {
        let (home, bundles) = try Self.chain()
        defer { withExtendedLifetime(home) {} }
        let dir = TempDir()
        let replica = try Archive.open(path: dir.file("replica.sqlite"))
        for (i, b) in bundles.enumerated() {
            #expect(try BundleApplier.apply(replica, lines: b.0, manifestHash: b.1, now: 1) == .applied(observationID: Int64(i + 1), sequence: i + 1))
        }
        #expect(try ArchiveVerifier.databaseChecks(replica, mode: .full).filter { $0.status == .problem }.isEmpty)
    }
}
