import Foundation
@testable import HealthProbeArchive
import HealthProbeCanonical
import HealthProbeTestSupport

/// The committed bundle vectors whose hashes are right and whose content is not
/// (Protocol/bundles.md section 6), made from the valid vector and from the
/// committed chain (`chain/`).
enum BundleVectors {
    struct Vector {
        var file: String
        var lines: [[UInt8]]
        var hash: String
        var error: String?
        var line: Int?
        var stage: String?
        /// Bundles applied first, in order (paths relative to `bundles/`).
        var after: [String]? = nil
        /// The file ends without the newline after its last line.
        var unterminated = false
    }

    typealias Object = [String: JSONValue]

    /// Changes the first item of `kind` that `matches` with `change`; the error is expected at its line.
    static func edit(_ lines: [[UInt8]], _ kind: String, where matches: (Object) -> Bool = { _ in true },
                     _ change: (Object) -> [Object]) -> (lines: [[UInt8]], hash: String, line: Int) {
        var line = 0
        let (out, hash) = try! editedBundle(lines) { i, o in
            guard line == 0, o["kind"] == .string(kind), matches(o) else { return [o] }
            line = i + 1
            return change(o)
        }
        return (out, hash, line)
    }

    /// The line (1-based) of the first item of `kind` that `matches`.
    static func line(of kind: String, in lines: [[UInt8]], where matches: (Object) -> Bool = { _ in true }) -> Int {
        for (i, l) in lines.enumerated() {
            if case .object(let o)? = try? JSONParser.parse(l), o["kind"] == .string(kind), matches(o) { return i + 1 }
        }
        return 0
    }

    static func with(_ o: Object, _ key: String, _ value: JSONValue?) -> [Object] {
        var o = o
        o[key] = value
        return [o]
    }

    static func sampleType(_ o: Object) -> String? {
        if case .object(let s)? = o["sample"], case .string(let t)? = s["type"] { return t }
        if o["kind"] == .string("new_sample"), case .object(let p)? = o["payload"], case .string(let t)? = p["type"] { return t }
        if case .string(let t)? = o["type_identifier"] { return t }
        return nil
    }

    static func meaning(_ lines: [[UInt8]]) -> [Vector] {
        var out: [Vector] = []
        func add(_ file: String, _ error: String, stage: String? = nil, lineOverride: Int? = nil, _ e: (lines: [[UInt8]], hash: String, line: Int)) {
            out.append(Vector(file: file, lines: e.lines, hash: e.hash, error: error, line: lineOverride ?? e.line, stage: stage))
        }
        add("bad-event-kind.jsonl", "field", edit(lines, "event") { with($0, "event_kind", .string("vanished")) })
        add("extra-member.jsonl", "field", edit(lines, "sample") { with($0, "extra", .int(1)) })
        add("missing-member.jsonl", "field", edit(lines, "sample") { with($0, "fuzzy_key", nil) })
        add("huge-count.jsonl", "field", edit(lines, "type_run") { with($0, "inserted_event_count", .number(1e300)) })
        add("february-30.jsonl", "field", edit(lines, "event") { with($0, "observed_at", .string("2025-02-30T06:00:00.000Z")) })
        add("appeared-without-payload.jsonl", "field",
            edit(lines, "event", where: { $0["event_kind"] == .string("appeared") }) { with($0, "payload_hash", .null) })
        add("no-observation.jsonl", "order", lineOverride: 2, edit(lines, "observation") { _ in [] })
        if case .object(var header)? = try? JSONParser.parse(lines[0]) {
            header["sequence"] = .number(9_223_372_036_854_775_808)
            let (l, h) = try! rebundle(header: try! CanonicalJSON.encode(.object(header)), items: Array(lines.dropFirst().dropLast()))
            add("huge-sequence.jsonl", "malformed", (l, h, 1))
        }
        // Rules between items (section 4.5), each broken once.
        let dropped = edit(lines, "sample_type") { _ in [] }
        let droppedType = sampleType(try! JSONParser.parse(lines[dropped.line - 1]).objectValue!)
        add("sample-type-missing.jsonl", "inconsistent", lineOverride: line(of: "sample", in: dropped.lines) { sampleType($0) == droppedType }, dropped)
        let twice = edit(lines, "sample_type") { [$0, $0] }
        add("sample-type-twice.jsonl", "order", lineOverride: twice.line + 1, twice)
        add("event-observed-at.jsonl", "inconsistent", edit(lines, "event") { with($0, "observed_at", .string("2025-01-07T06:00:01.000Z")) })
        add("sample-first-seen-at.jsonl", "inconsistent", edit(lines, "sample") { with($0, "first_seen_at", .string("2025-01-06T06:00:00.000Z")) })
        add("range-first-seen-at.jsonl", "inconsistent", edit(lines, "range_open") { with($0, "first_seen_at", .string("2025-01-06T06:00:00.000Z")) })
        add("inserted-count.jsonl", "inconsistent", edit(lines, "type_run") { o in
            guard case .number(let n)? = o["inserted_event_count"] else { return [o] }
            return with(o, "inserted_event_count", .number(n + 1))
        })
        add("completed-without-count.jsonl", "field",
            edit(lines, "type_run", where: { $0["status"] == .string("completed") }) { with($0, "verified_visible_count", .null) })
        add("unauthorized-with-events.jsonl", "inconsistent",
            edit(lines, "type_run", where: { $0["inserted_event_count"] != .number(0) }) { o in
                var o = o
                o["status"] = .string("unauthorized")
                o["error_kind"] = .string("authorization_denied")
                o["verified_visible_count"] = .null
                return [o]
            })
        let failed = edit(lines, "type_run") { o in
            var o = o
            o["status"] = .string("failed")
            o["error_kind"] = .string("query_failed")
            o["verified_visible_count"] = .null
            return [o]
        }
        add("failed-run-completed-observation.jsonl", "inconsistent", lineOverride: failed.lines.count, failed)
        let category = edit(lines, "sample_type", where: { $0["category"] == .string("quantity") }) { with($0, "category", .string("category")) }
        let categoryType = sampleType(try! JSONParser.parse(lines[category.line - 1]).objectValue!)
        add("category-contradiction.jsonl", "inconsistent", lineOverride: line(of: "version", in: category.lines) { sampleType($0) == categoryType }, category)
        out.append(Vector(file: "no-final-newline.jsonl", lines: lines, hash: try! rebundle(header: lines[0], items: Array(lines.dropFirst().dropLast())).1, error: "malformed", line: lines.count, unterminated: true))
        // Refused when applied (section 5.2), to an empty replica: the first bundle of a chain.
        // The appearance dropped, and its run's count with it (else the count gives it away, section 4.5).
        var droppedEventType: String?
        let (noEvent, noEventHash) = try! editedBundle(lines) { _, o in
            if droppedEventType == nil, o["kind"] == .string("event"), o["event_kind"] == .string("appeared") {
                droppedEventType = sampleType(o)
                return []
            }
            if o["kind"] == .string("type_run"), sampleType(o) == droppedEventType, case .number(let n)? = o["inserted_event_count"] {
                return with(o, "inserted_event_count", .number(n - 1))
            }
            return [o]
        }
        // Found once every item is in: no line.
        out.append(Vector(file: "range-without-event.jsonl", lines: noEvent, hash: noEventHash, error: "replica_check", line: nil, stage: "apply"))
        add("unknown-payload.jsonl", "unresolved", stage: "apply",
            edit(lines, "event") { with($0, "payload_hash", .string(String(repeating: "0", count: 64))) })
        let sampleTwice = edit(lines, "sample") { [$0, $0] }
        add("sample-twice.jsonl", "reference", stage: "apply", lineOverride: sampleTwice.line + 1, sampleTwice)
        return out
    }

    /// Vectors of format 2 (section 4.6): `lines` is the valid vector's capture built in format 2
    /// (`observation-1-format-2.jsonl`), `next` the same home's next bundle built in format 1 after it.
    /// `next2` the same next bundle built in format 2.
    static func format2(_ lines: [[UInt8]], next: (lines: [[UInt8]], hash: String), next2: (lines: [[UInt8]], hash: String)) -> [Vector] {
        var out: [Vector] = []
        func add(_ file: String, _ error: String, stage: String? = nil, after: [String]? = nil, lineOverride: Int? = nil,
                 _ e: (lines: [[UInt8]], hash: String, line: Int)) {
            out.append(Vector(file: file, lines: e.lines, hash: e.hash, error: error, line: lineOverride ?? e.line, stage: stage, after: after))
        }
        let first = line(of: "new_sample", in: lines)
        // A format-1 header over new_sample items: a format-1 reader does not know the kind.
        if case .object(var header)? = try? JSONParser.parse(lines[0]) {
            header["bundle_format"] = .int(1)
            let (l, h) = try! rebundle(header: try! CanonicalJSON.encode(.object(header)), items: Array(lines.dropFirst().dropLast()))
            add("new-sample-format-1.jsonl", "unknown_kind", (l, h, first))
        }
        // Its type's category contradicts its payload's value_kind (section 4.5).
        let category = edit(lines, "sample_type", where: { $0["category"] == .string("quantity") }) { with($0, "category", .string("category")) }
        let categoryType = sampleType(try! JSONParser.parse(lines[category.line - 1]).objectValue!)
        add("new-sample-category.jsonl", "inconsistent", lineOverride: line(of: "new_sample", in: category.lines) { sampleType($0) == categoryType }, category)
        // The first new_sample's sample sent again as a sample item: added twice (section 5.2).
        let n = try! JSONParser.parse(lines[first - 1]).objectValue!
        let observedAt = try! JSONParser.parse(lines[1]).objectValue!["observed_at"]!
        let sample: Object = ["kind": .string("sample"), "type_identifier": .string(sampleType(n)!), "sample_uuid_hash": n["sample_uuid_hash"]!,
                              "strict_fingerprint": n["strict_fingerprint"]!, "semantic_fingerprint": n["semantic_fingerprint"]!,
                              "fuzzy_key": n["fuzzy_key"]!, "first_seen_at": observedAt]
        var at = 0
        let later: Set<String> = ["version", "event", "range_open", "range_close", "relationship", "type_run"]
        let (twice, twiceHash) = try! editedBundle(lines) { i, o in
            guard at == 0, case .string(let k)? = o["kind"], later.contains(k) else { return [o] }
            at = i + 1
            return [sample, o]
        }
        add("new-sample-twice.jsonl", "reference", stage: "apply", (twice, twiceHash, at))
        // The next bundle in format 2 carrying again the first new_sample of the bundle before it:
        // a sample the replica holds (section 5.2), its run counting the appearance.
        let heldType = sampleType(n)
        var heldAt = 0
        let (held, heldHash) = try! editedBundle(next2.lines) { i, o in
            if heldAt == 0, o["kind"] == .string("new_sample") {
                heldAt = i + 1
                return [n, o]
            }
            if o["kind"] == .string("type_run"), sampleType(o) == heldType, case .number(let c)? = o["inserted_event_count"] {
                return with(o, "inserted_event_count", .number(c + 1))
            }
            return [o]
        }
        add("new-sample-held.jsonl", "reference", stage: "apply", after: ["observation-1-format-2.jsonl"], (held, heldHash, heldAt))
        // The chain's next bundle in format 1 after a bundle of format 2 (section 5.2).
        add("format-1-after-2.jsonl", "malformed", stage: "apply", after: ["observation-1-format-2.jsonl"], (next.lines, next.hash, 1))
        return out
    }

    /// Vectors that follow the committed chain (`chain/1.jsonl`...): refused for what the
    /// replica holds after the bundles before them (section 5.2), or refused from their
    /// bytes where a rule needs a later sequence. `chain` holds the chain's bundles.
    static func chained(_ chain: [[[UInt8]]]) -> [Vector] {
        var out: [Vector] = []
        func add(_ file: String, _ error: String?, stage: String? = "apply", after: [String], lineOverride: Int? = nil, _ e: (lines: [[UInt8]], hash: String, line: Int)) {
            out.append(Vector(file: file, lines: e.lines, hash: e.hash, error: error, line: error == nil ? nil : (lineOverride ?? e.line), stage: error == nil ? nil : stage,
                              after: after.isEmpty ? nil : after))
        }
        // Section 4.3 from the bytes alone: a range closed by a range opened at its own sequence.
        add("range-close-not-earlier.jsonl", "field", stage: nil, after: [], edit(chain[1], "range_close") { with($0, "first_sequence", .int(2)) })
        let twice = edit(chain[1], "range_close") { [$0, $0] }
        add("range-closed-twice.jsonl", "reference", after: ["chain/1.jsonl"], lineOverride: twice.line + 1, twice)
        // Bundle 3 closes again a range bundle 2 closed.
        let closed = chain[1].first { String(decoding: $0, as: UTF8.self).contains("\"kind\":\"range_close\"") }!
        let again = edit(chain[2], "range_close") { [try! JSONParser.parse(closed).objectValue!, $0] }
        add("range-closed-again.jsonl", "reference", after: ["chain/1.jsonl", "chain/2.jsonl"], again)
        add("range-closed-before-opened.jsonl", "inconsistent", after: ["chain/1.jsonl"],
            edit(chain[1], "range_close") { with($0, "last_seen_at", .string("2000-01-01T00:00:00.000Z")) })
        // Bundle 2 observed a day before bundle 1: every date of its own moved with it.
        let observed1 = try! JSONParser.parse(chain[0][1]).objectValue!["observed_at"]!
        let observed2 = try! JSONParser.parse(chain[1][1]).objectValue!["observed_at"]!
        guard case .string(let observedFirst) = observed1, let t = CanonicalDate.parse(observedFirst) else { return out }
        let earlier = JSONValue.string(CanonicalDate.string(t - 86_400))
        let (retimed, retimedHash) = try! editedBundle(chain[1]) { _, o in
            var o = o
            for key in ["observed_at", "first_seen_at"] where o[key] == observed2 { o[key] = earlier }
            if o["kind"] == .string("range_close") { o["last_seen_at"] = earlier }
            return [o]
        }
        add("observation-earlier.jsonl", "inconsistent", after: ["chain/1.jsonl"], (retimed, retimedHash, 2))
        // A relationship recorded by bundle 2 and again by bundle 3.
        let samples = chain[0].compactMap { l -> Object? in
            guard case .object(let o)? = try? JSONParser.parse(l), o["kind"] == .string("sample") else { return nil }
            return o
        }
        func ref(_ o: Object) -> JSONValue { .object(["strict_fingerprint": o["strict_fingerprint"]!, "type": o["type_identifier"]!]) }
        let relationship: Object = ["kind": .string("relationship"), "metadata_hash": .null, "relationship_kind": .string("correlation_member"),
                                    "source": ref(samples[0]), "target": ref(samples[1])]
        func withRelationship(_ lines: [[UInt8]]) -> ([[UInt8]], String) {
            var added = false
            return try! editedBundle(lines) { _, o in
                guard !added, o["kind"] == .string("type_run") else { return [o] }
                added = true
                return [relationship, o]
            }
        }
        let (first, firstHash) = withRelationship(chain[1])
        add("relationship-first.jsonl", nil, after: ["chain/1.jsonl"], (first, firstHash, 0))
        // Bundle 3 of that chain: its header links to the edited bundle 2.
        guard case .object(var header)? = try? JSONParser.parse(chain[2][0]) else { return out }
        header["previous_manifest_hash"] = .string(firstHash)
        let (relinked, _) = try! rebundle(header: try! CanonicalJSON.encode(.object(header)), items: Array(chain[2].dropFirst().dropLast()))
        let (held, heldHash) = withRelationship(relinked)
        add("relationship-held.jsonl", "reference", after: ["chain/1.jsonl", "relationship-first.jsonl"],
            lineOverride: line(of: "relationship", in: held), (held, heldHash, 0))
        return out
    }
}

extension JSONValue {
    var objectValue: [String: JSONValue]? { if case .object(let o) = self { return o }; return nil }
}
