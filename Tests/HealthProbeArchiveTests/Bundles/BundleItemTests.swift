import Foundation
import GRDB
import Testing
@testable import HealthProbeArchive
import HealthProbeCanonical
@testable import HealthProbeSimulator
import HealthProbeTestSupport

/// The one typed model of a bundle item: decoded from a line, written back, built from an archive.
@Suite("Bundle items")
struct BundleItemTests {
    /// Every item line of the committed bundle vectors that decodes (the refused vectors' bad lines do not).
    func vectorItems() throws -> [(line: [UInt8], item: BundleItem)] {
        let dir = vectorURL("bundles")
        let files = try FileManager.default.subpathsOfDirectory(atPath: dir.path).filter { $0.hasSuffix(".jsonl") }.sorted()
        var out: [(line: [UInt8], item: BundleItem)] = []
        for file in files {
            let lines = try Data(contentsOf: dir.appendingPathComponent(file)).split(separator: UInt8(ascii: "\n")).map(Array.init)
            for (n, line) in lines.enumerated() {
                guard let flat = try? JSONParser.flat(line), let kind = BundleItemKind(flat),
                      let item = try? BundleItem.decode(flat, kind: kind, line: n + 1) else { continue }
                out.append((line, item))
            }
        }
        return out
    }

    @Test("every item line of the committed vectors decodes to its kind's typed payload and writes back byte for byte; every kind is met")
    func vectorsRoundTrip() throws {
        let items = try vectorItems()
        #expect(items.count >= 500, "the vectors hold hundreds of items")
        var kinds: [BundleItemKind: Int] = [:]
        for (line, item) in items {
            #expect(try item.canonicalBytes == line, "\(item.kind.rawValue)")
            kinds[item.kind, default: 0] += 1
        }
        #expect(Set(kinds.keys) == Set(BundleItemKind.allCases), "kinds met: \(kinds.keys.map(\.rawValue).sorted())")
    }

    @Test("decoded values are the line's: hashes, dates, numbers and kinds as the generic parser reads them")
    func typedValues() throws {
        var checked = 0
        for (line, item) in try vectorItems() {
            guard case .object(let o)? = try? JSONParser.parse(line) else { Issue.record("not an object"); continue }
            func string(_ v: JSONValue?) -> String? { if case .string(let s)? = v { s } else { nil } }
            func object(_ v: JSONValue?) -> [String: JSONValue] { if case .object(let x)? = v { x } else { [:] } }
            switch item {
            case .version(let v):
                let p = object(o["payload"])
                #expect(v.payloadHash.hex == string(o["payload_hash"]))
                #expect(CanonicalDate.string(v.payload.startDate) == string(p["start_date"]))
                #expect(v.payload.valueKind.rawValue == string(p["value_kind"]))
                #expect(v.payload.type.string == string(p["type"]) && v.sample.type == v.payload.type)
                if case .number(let n)? = p["numeric_value"] { #expect(v.payload.numericValue == n) } else { #expect(v.payload.numericValue == nil) }
                #expect(v.payload.deviceHash?.hex == string(p["device_hash"]))
                checked += 1
            case .event(let e):
                #expect(e.eventKind.rawValue == string(o["event_kind"]) && e.evidenceKind.rawValue == string(o["evidence_kind"]))
                #expect(CanonicalDate.string(e.observedAt) == string(o["observed_at"]))
                #expect(e.payloadHash?.hex == string(o["payload_hash"]))
                #expect(e.sample.strictFingerprint.hex == string(object(o["sample"])["strict_fingerprint"]))
                checked += 1
            case .typeRun(let r):
                if case .number(let n)? = o["inserted_event_count"] { #expect(Double(r.insertedEventCount) == n) } else { Issue.record("no count") }
                #expect(r.status.rawValue == string(o["status"]) && r.typeIdentifier.string == string(o["type_identifier"]))
                checked += 1
            default:
                continue
            }
        }
        #expect(checked >= 200)
    }

    @Test("text with escapes decodes to its characters and writes back escaped as RFC 8785 does")
    func escapedText() throws {
        let name = "Quote \" back\\slash, tab\t, é and \u{1}"
        let json: JSONValue = .object(["kind": .string("source"), "bundle_identifier": .string(name), "source_name_hash": .null])
        let line = try CanonicalJSON.encode(json)
        let flat = try JSONParser.flat(line)
        let item = try BundleItem.decode(flat, kind: .source, line: 2)
        guard case .source(let s) = item else { Issue.record("not a source"); return }
        #expect(s.bundleIdentifier?.string == name)
        #expect(try item.canonicalBytes == line)
    }

    @Test("a value outside its closed set, or members that contradict each other, are refused naming the member or the rule")
    func refusals() throws {
        // A category no value kind has; an appeared event with the evidence of a disappearance.
        let hex = JSONValue.string(String(repeating: "a", count: 64))
        let cases: [(JSONValue, String)] = [
            (.object(["kind": .string("sample_type"), "category": .string("cuantity"), "display_name": .null,
                      "type_identifier": .string("HKQuantityTypeIdentifierStepCount")]), "sample_type.category"),
            (.object(["kind": .string("event"), "event_kind": .string("appeared"), "evidence_kind": .string("full_scan_absent"),
                      "observed_at": .string("2026-01-01T00:00:00.000Z"), "payload_hash": .null,
                      "sample": .object(["strict_fingerprint": hex, "type": .string("T")])]), "event: an appeared"),
        ]
        for (json, names) in cases {
            let flat = try JSONParser.flat(try CanonicalJSON.encode(json))
            #expect { _ = try BundleItem.decode(flat, kind: BundleItemKind(flat)!, line: 9) } throws: {
                guard let e = $0 as? BundleError else { return false }
                return e.code == .field && e.line == 9 && e.message.contains(names)
            }
        }
    }

    @Test("a line the schema refuses is named by its member's whole path and the rule, word for word")
    func schemaMessages() throws {
        let version = try #require(try vectorItems().first { if case .version(let v) = $0.item { return v.payload.source != nil } else { return false } })
        guard case .object(let item)? = try? JSONParser.parse(version.line, canonical: true), case .object(let payload)? = item["payload"],
              case .object(let source)? = payload["source"] else { Issue.record("a version item with a source"); return }
        func top(_ key: String, _ value: JSONValue?) -> JSONValue {
            var i = item
            i[key] = value
            return .object(i)
        }
        func inPayload(_ key: String, _ value: JSONValue?) -> JSONValue {
            var p = payload
            p[key] = value
            return top("payload", .object(p))
        }
        func inSource(_ key: String, _ value: JSONValue?) -> JSONValue {
            var c = source
            c[key] = value
            return inPayload("source", .object(c))
        }
        let cases: [(JSONValue, String)] = [
            (top("payload_hash", nil), "version.payload_hash is missing"),
            (inPayload("unit", nil), "version.payload.unit is missing"),
            (top("zzz", .int(1)), "version has an unknown member \"zzz\""),
            (inSource("extra", .null), "version.payload.source has an unknown member \"extra\""),
            (inSource("name_hash", .string("ABC")), "version.payload.source.name_hash must be 64 lower-case hex digits"),
            (inPayload("value_kind", .string("vibes")),
             "version.payload.value_kind must be one of quantity, category, workout, correlation, activity_summary, heartbeat_series, route, other"),
            (inPayload("category_value", .number(1.5)), "version.payload.category_value must be an integer in -9007199254740992...9007199254740992"),
            (inPayload("start_date", .string("2025-02-30T00:00:00.000Z")),
             "version.payload.start_date must be a canonical date (YYYY-MM-DDTHH:MM:SS.sssZ) from 1900 up to 2200"),
            (inPayload("source", .int(3)), "version.payload.source must be an object"),
        ]
        for (json, message) in cases {
            let flat = try JSONParser.flat(try CanonicalJSON.encode(json))
            do {
                _ = try BundleItem.decode(flat, kind: .version, line: 7)
                Issue.record("accepted: \(message)")
            } catch {
                // `decode` throws only `BundleError`s.
                #expect(error.code == .field && error.line == 7 && error.message == "line 7: " + message, "\(error.message)")
            }
        }
    }

    @Test("the builder refuses a stored hash that is not 32 bytes, naming its column, rather than write a bundle around it")
    func damagedArchive() throws {
        let t = TempHome()
        try t.simulate(seed: 5, days: [2], types: [SimulatedType.all[0]])
        let node = try t.open()
        // The schema's own checks refuse such a row: damage as a disk or another tool would, past them.
        try node.archive.writer.writeWithoutTransaction { db in
            try db.execute(sql: "PRAGMA ignore_check_constraints = ON")
            try db.execute(sql: "UPDATE samples SET strict_fingerprint = zeroblob(16) WHERE id = (SELECT min(id) FROM samples)")
            try db.execute(sql: "PRAGMA ignore_check_constraints = OFF")
        }
        #expect { _ = try bundleLines(node, 1, previous: nil) } throws: {
            ($0 as? ArchiveError)?.message.contains("samples.strict_fingerprint holds a hash of 16 bytes") == true
        }
    }
}
