import Foundation
import HealthProbeCanonical

/// The members every bundle item kind holds and what each may hold
/// (Protocol/bundles.md section 4.1): exactly these members, no more, no
/// fewer; strings bounded; hashes 64 lower-case hex digits; dates canonical
/// text inside `BundleItemSchema.dates`; integers exact and inside their range;
/// closed enumerations for every kind field. Checked on the flat parse, in one
/// pass over each object's members (canonical key order is the schema's order).
public enum BundleItemSchema {
    /// What one member may hold.
    indirect enum Rule: Sendable {
        case string(max: Int)
        case hex
        case date
        case int(ClosedRange<Int64>)
        case number
        /// One of these values (their UTF-8, compared byte for byte).
        case oneOf([[UInt8]])
        /// Standard base64 of at most `max` bytes of text.
        case base64(max: Int)
        /// A string holding a canonical JSON object.
        case jsonObject(max: Int)
        case object([Field])
        /// `null` or the rule.
        case nullable(Rule)
        /// A fixed string (the item's `kind`).
        case literal(String)
    }

    struct Field: Sendable {
        let name: String
        let key: [UInt8]
        let rule: Rule
        init(_ name: String, _ rule: Rule) {
            self.name = name
            key = Array(name.utf8)
            self.rule = rule
        }
    }

    /// Item dates (sample start and end, capture times): from 1900-01-01 up to, not including, 2200-01-01.
    public static let dates = -2_208_988_800.0 ..< 7_258_118_400.0

    /// Whether Unix seconds `t`, normalized to whole milliseconds as the archive stores
    /// them, lie in `dates`: what a capture or an import may store, so the server takes its bundle.
    public static func holds(date t: Double) -> Bool { dates.contains(CanonicalDate.normalize(t)) }
    /// `dates` as people read them, by UTC day: "1900-01-01 to 2199-12-31 (UTC)".
    public static let datesText = "\(CanonicalDate.string(dates.lowerBound).prefix(10)) to \(CanonicalDate.string(dates.upperBound - 86_400).prefix(10)) (UTC)"
    /// What a refusal says of a date outside `dates`, after naming which date.
    public static let dateNotHeld = "is outside \(datesText), the dates the archive holds"
    /// Integers exactly representable as JSON numbers (IEEE doubles).
    public static let exactIntegers: ClosedRange<Int64> = -(1 << 53)...(1 << 53)
    /// Counts: 0 to 2^53 - 1.
    static let counts: ClosedRange<Int64> = 0...((1 << 53) - 1)
    /// Free text (versions, names, identifiers): at most this many UTF-8 bytes.
    public static let maxText = 1024
    /// A type identifier: at most this many bytes.
    public static let maxTypeIdentifier = 256
    /// An anchor (base64 text): at most this many bytes.
    public static let maxAnchor = 65_536
    /// A metadata item's JSON text: at most this many bytes.
    public static let maxMetadataJSON = 1 << 20

    static let text = Rule.nullable(.string(max: maxText))
    static let typeIdentifier = Rule.string(max: maxTypeIdentifier)
    static let sampleReference = Rule.object([Field("strict_fingerprint", .hex), Field("type", typeIdentifier)])
    static func names<E: RawRepresentable & CaseIterable>(_: E.Type) -> [[UInt8]] where E.RawValue == String { E.allCases.map { Array($0.rawValue.utf8) } }
    static func text(_ names: [[UInt8]]) -> String { names.map { String(decoding: $0, as: UTF8.self) }.joined(separator: ", ") }

    /// A version's payload (in `version` and `new_sample` items).
    private static let payload = Field("payload", .object([
        Field("category_value", .nullable(.int(exactIntegers))), Field("creation_date", .nullable(.date)), Field("device_hash", .nullable(.hex)),
        Field("duration_seconds", .nullable(.number)), Field("end_date", .date), Field("metadata_hash", .nullable(.hex)),
        Field("numeric_value", .nullable(.number)),
        Field("source", .nullable(.object([Field("bundle_identifier", text), Field("name_hash", .nullable(.hex))]))),
        Field("source_revision", .nullable(.object([Field("operating_system_version", text), Field("product_type", text), Field("version", text)]))),
        Field("start_date", .date), Field("type", typeIdentifier), Field("unit", text),
        Field("value_kind", .oneOf(names(ValueKind.self))), Field("workout_activity_type", .nullable(.int(exactIntegers))),
    ]))

    /// The members of each kind as the protocol lists them (the `kind` member added and
    /// everything sorted in canonical key order by `fieldsByKind`).
    private static func members(_ kind: BundleItemKind) -> [Field] {
        let date = Rule.date, optionalDate = Rule.nullable(.date), optionalHex = Rule.nullable(.hex)
        return switch kind {
        case .observation: [
            Field("app_version", text), Field("ended_at", optionalDate), Field("notes", text), Field("observed_at", date),
            Field("os_version", text), Field("schema_version", .int(1...1_000)), Field("selected_type_set_hash", optionalHex),
            Field("started_at", optionalDate), Field("status", .oneOf(names(ObservationStatus.self))),
            Field("time_zone_identifier", text), Field("time_zone_seconds_from_gmt", .nullable(.int(-64_800...64_800))),
            Field("trigger_reason", .oneOf(names(TriggerReason.self))),
        ]
        case .sampleType: [Field("category", .nullable(.oneOf(names(ValueKind.self)))), Field("display_name", text), Field("type_identifier", typeIdentifier)]
        case .source: [Field("bundle_identifier", text), Field("source_name_hash", optionalHex)]
        case .sourceRevision: [
            Field("operating_system_version", text), Field("product_type", text),
            Field("source", .object([Field("bundle_identifier", text), Field("source_name_hash", optionalHex)])), Field("version", text),
        ]
        case .device: [
            Field("device_hash", .hex), Field("firmware_version", text), Field("hardware_version", text),
            Field("local_identifier_hash", optionalHex), Field("manufacturer_hash", optionalHex), Field("model", text),
            Field("software_version", text), Field("udi_hash", optionalHex),
        ]
        case .metadata: [Field("metadata_hash", .hex), Field("metadata_json", .jsonObject(max: maxMetadataJSON))]
        case .newSample: [
            Field("fuzzy_key", text), payload, Field("sample_uuid_hash", optionalHex),
            Field("semantic_fingerprint", optionalHex), Field("strict_fingerprint", .hex),
        ]
        case .sample: [
            Field("first_seen_at", date), Field("fuzzy_key", text), Field("sample_uuid_hash", optionalHex),
            Field("semantic_fingerprint", optionalHex), Field("strict_fingerprint", .hex), Field("type_identifier", typeIdentifier),
        ]
        case .version: [
            payload,
            Field("payload_hash", .hex), Field("sample", sampleReference),
        ]
        case .event: [
            Field("event_kind", .oneOf(names(EventKind.self))), Field("evidence_kind", .oneOf(names(EvidenceKind.self))),
            Field("observed_at", date), Field("payload_hash", optionalHex), Field("sample", sampleReference),
        ]
        case .rangeOpen: [Field("first_seen_at", date), Field("payload_hash", optionalHex), Field("sample", sampleReference)]
        case .rangeClose: [
            Field("first_sequence", .int(BundleVerifier.sequences)), Field("last_seen_at", date), Field("payload_hash", optionalHex), Field("sample", sampleReference),
        ]
        case .relationship: [
            Field("metadata_hash", optionalHex), Field("relationship_kind", .oneOf(names(RelationshipKind.self))),
            Field("source", sampleReference), Field("target", sampleReference),
        ]
        case .typeRun: [
            Field("anchor_after", .nullable(.base64(max: maxAnchor))), Field("anchor_before", .nullable(.base64(max: maxAnchor))),
            Field("deleted_event_count", .int(counts)), Field("ended_at", optionalDate),
            Field("error_kind", .nullable(.oneOf(names(TypeRunErrorKind.self)))), Field("error_message_hash", optionalHex),
            Field("inserted_event_count", .int(counts)), Field("rejected_record_count", .int(counts)),
            Field("run_kind", .oneOf(names(TypeRunKind.self))), Field("started_at", optionalDate),
            Field("status", .oneOf(names(TypeRunStatus.self))), Field("type_identifier", typeIdentifier),
            Field("verified_visible_count", .nullable(.int(counts))),
        ]
        }
    }

    /// The members of each kind, by `BundleItemKind.order`, sorted in canonical key order.
    static let fieldsByKind: [[Field]] = BundleItemKind.allCases.map { kind in
        (members(kind) + [Field("kind", .literal(kind.rawValue))]).map(sortNested).sorted { $0.key.lexicographicallyPrecedes($1.key) }
    }

    private static func sortNested(_ f: Field) -> Field {
        func sort(_ r: Rule) -> Rule {
            switch r {
            case .object(let fields): return .object(fields.map(sortNested).sorted { $0.key.lexicographicallyPrecedes($1.key) })
            case .nullable(let inner): return .nullable(sort(inner))
            default: return r
            }
        }
        return Field(f.name, sort(f.rule))
    }

    /// Checks item `o` of `kind` against its schema (`BundleItem.decode` then reads it),
    /// through `compiled`.
    static func check(_ kind: BundleItemKind, _ o: FlatJSON, line: Int) throws(BundleError) {
        try checkObject(o, parent: -1, compiled.kinds[kind.order], owner: -1, compiled, kind: kind, line: line)
    }

    /// The members of the object at `parent` (`-1`: the item) against the rows `span` of `c`;
    /// `owner` is the object's own row (-1: the item), for messages.
    private static func checkObject(_ o: FlatJSON, parent: Int32, _ span: Compiled.Span, owner: Int, _ c: Compiled,
                                    kind: BundleItemKind, line: Int) throws(BundleError) {
        var next = 0
        var i = parent + 1
        let n = Int32(o.memberCount)
        while i < n {
            defer { i += 1 }
            guard o.parent(i) == parent else { continue }
            let key = o.keyRange(i)
            let row = span.start + next
            guard next < span.count, c.equals(o.bytes, key, c.checks[row].keyStart, c.checks[row].keyCount) else {
                // Canonical order: a key that is not the next field is unknown, or the next field is missing.
                let path = owner < 0 ? kind.rawValue : c.path(owner, kind: kind)
                let name = String(decoding: o.bytes[key].prefix(64), as: UTF8.self)
                if (row ..< span.start + span.count).contains(where: { c.equals(o.bytes, key, c.checks[$0].keyStart, c.checks[$0].keyCount) }) {
                    throw BundleError(.field, line: line, "line \(line): \(path).\(c.names[row]) is missing")
                }
                throw BundleError(.field, line: line, "line \(line): \(path) has an unknown member \(Self.printable(name))")
            }
            try checkValue(o, i, row, c, kind: kind, line: line)
            next += 1
        }
        if next < span.count {
            let path = owner < 0 ? kind.rawValue : c.path(owner, kind: kind)
            throw BundleError(.field, line: line, "line \(line): \(path).\(c.names[span.start + next]) is missing")
        }
    }

    private static func checkValue(_ o: FlatJSON, _ i: Int32, _ row: Int, _ c: Compiled, kind: BundleItemKind, line: Int) throws(BundleError) {
        func fail(_ why: String) -> BundleError { BundleError(.field, line: line, "line \(line): \(c.path(row, kind: kind)) \(why)") }
        let check = c.checks[row]
        let type = o.type(i)
        if check.nullable, type == .null { return }
        switch check.op {
        case .literal:
            return  // the kind, already matched
        case .string:
            // UTF-8 bytes of the value, not of its JSON text: `\"` is one byte, not two.
            guard let bytes = o.plainRange(i)?.count ?? o.string(at: i)?.utf8.count else { throw fail("must be a string") }
            guard bytes <= check.max else { throw fail("is longer than \(check.max) bytes") }
        case .hex:
            guard let r = o.plainRange(i), ArchiveHasher.isLowerHex(o.bytes, r) else {
                throw fail("must be 64 lower-case hex digits")
            }
        case .date:
            guard let r = o.plainRange(i), Self.isCanonicalDate(o.bytes, r) else {
                throw fail("must be a canonical date (YYYY-MM-DDTHH:MM:SS.sssZ) from 1900 up to 2200")
            }
        case .int:
            guard type == .number else { throw fail("must be an integer") }
            let d = o.number(at: i)
            // Compared as doubles: no conversion of an out-of-range number is ever attempted.
            guard d == d.rounded(.towardZero), d >= check.lowDouble, d <= check.highDouble else {
                throw fail("must be an integer in \(check.low)...\(check.high)")
            }
        case .number:
            guard type == .number else { throw fail("must be a number") }
        case .oneOf:
            guard let r = o.plainRange(i),
                  (check.children.start ..< check.children.start + check.children.count).contains(where: { c.equals(o.bytes, r, c.choices[$0].start, c.choices[$0].count) }) else {
                throw fail("must be one of \(c.choiceText(row))")
            }
        case .base64:
            guard let r = o.plainRange(i), r.count <= check.max, r.count % 4 == 0, Data(base64Encoded: Data(o.bytes[r])) != nil else {
                throw fail("must be standard base64 of at most \(check.max) characters")
            }
        case .jsonObject:
            guard type == .string, let text = o.string(at: i) else { throw fail("must be a string") }
            guard text.utf8.count <= check.max else { throw fail("is longer than \(check.max) bytes") }
            guard let inner = try? JSONParser.flat(Array(text.utf8)), inner.isObject else {
                throw fail("must hold a JSON object in canonical form")
            }
        case .object:
            guard type == .object else { throw fail("must be an object") }
            try checkObject(o, parent: i, check.children, owner: row, c, kind: kind, line: line)
        }
    }

    /// `YYYY-MM-DDTHH:MM:SS.sssZ`, a real calendar instant inside `dates`, written exactly as `CanonicalDate` writes it.
    static func isCanonicalDate(_ bytes: [UInt8], _ r: Range<Int>) -> Bool {
        guard r.count == CanonicalDate.length else { return false }
        return bytes.withUnsafeBufferPointer { buf -> Bool in
            let slice = UnsafeBufferPointer(rebasing: buf[r])
            guard let t = CanonicalDate.parse(bytes: slice), dates.contains(t) else { return false }
            return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: CanonicalDate.length) { out in
                CanonicalDate.write(t, to: out.baseAddress!)
                return memcmp(out.baseAddress!, slice.baseAddress!, CanonicalDate.length) == 0
            }
        }
    }

    /// A member name fit for an error message: printable ASCII, shortened.
    static func printable(_ s: String) -> String {
        let clean = String(s.unicodeScalars.map { $0.isASCII && $0.value >= 0x20 && $0.value < 0x7F ? Character($0) : "?" })
        return "\"" + clean.prefix(40) + "\""
    }
}

extension BundleItemSchema {
    /// The member table of Protocol/bundles.md section 4.1, one row per member in
    /// item-kind order, nested members as `outer.inner` (the document is checked against it).
    public static func documentRows() -> [String] {
        var rows = ["| kind | member | type |", "|---|---|---|"]
        func name(_ r: Rule) -> String {
            switch r {
            case .string(let max): return "text \(max)"
            case .hex: return "hex"
            case .date: return "date"
            case .int(let range): return "integer \(range.lowerBound)..\(range.upperBound)"
            case .number: return "number"
            case .oneOf(let names): return "one of " + text(names)
            case .base64(let max): return "base64 \(max)"
            case .jsonObject(let max): return "json-object \(max)"
            case .object: return "object"
            case .nullable(let inner): return name(inner) + " or null"
            case .literal(let s): return "\"\(s)\""
            }
        }
        func add(_ kind: String, _ fields: [Field], prefix: String) {
            for f in fields {
                rows.append("| `\(kind)` | `\(prefix)\(f.name)` | `\(name(f.rule))` |")
                var r = f.rule
                if case .nullable(let inner) = r { r = inner }
                if case .object(let inner) = r { add(kind, inner, prefix: prefix + f.name + ".") }
            }
        }
        for kind in BundleItemKind.allCases { add(kind.rawValue, fieldsByKind[kind.order], prefix: "") }
        return rows
    }
}
