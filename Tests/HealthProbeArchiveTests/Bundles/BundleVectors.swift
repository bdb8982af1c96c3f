import Foundation
@testable import HealthProbeArchive
import HealthProbeCanonical
import HealthProbeTestSupport

/// The committed bundle vectors whose hashes are right and whose content is not
/// (Protocol/bundles.md section 6), made from the valid vector.
enum BundleVectors {
    struct Vector {
        var file: String
        var lines: [[UInt8]]
        var hash: String
        var error: String
        var line: Int
        var stage: String?
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

    static func meaning(_ lines: [[UInt8]]) -> [Vector] {
        func with(_ o: Object, _ key: String, _ value: JSONValue?) -> [Object] {
            var o = o
            o[key] = value
            return [o]
        }
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
        add("range-without-event.jsonl", "replica_check", stage: "apply", edit(lines, "event", where: { $0["event_kind"] == .string("appeared") }) { _ in [] })
        add("unknown-payload.jsonl", "unresolved", stage: "apply",
            edit(lines, "event") { with($0, "payload_hash", .string(String(repeating: "0", count: 64))) })
        add("sample-twice.jsonl", "reference", stage: "apply", edit(lines, "sample") { [$0, $0] })
        return out
    }
}
