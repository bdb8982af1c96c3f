import Foundation
import GRDB

/// One exported record: its canonical item (with `item_hash`) and the fields
/// of its CSV row.
public struct RecordItem: Sendable {
    public var typeIdentifier: String
    /// Canonical item JSON without `item_hash`.
    public var json: [UInt8]
    /// Where `,"item_hash":"..."` goes in `json`.
    public var hashAt: Int
    /// Canonical JSON of CSV columns 2-22 by name (the CSV item hash input).
    public var csvHashInput: [UInt8]
    /// Those columns as RFC 4180 text, comma-separated.
    public var csvRow: [UInt8]

    /// The item hash and the item with its `item_hash` member.
    public func sealed() -> (json: [UInt8], hash: String) {
        let hash = ArchiveHasher.sha256(.exportItem, json)
        var out: [UInt8] = []
        out.reserveCapacity(json.count + 80)
        out.append(contentsOf: json[0..<hashAt])
        out.append(contentsOf: Array(",\"item_hash\":\"".utf8))
        out.append(contentsOf: Array(hash.utf8))
        out.append(UInt8(ascii: "\""))
        out.append(contentsOf: json[hashAt...])
        return (out, hash)
    }
}

/// Streams the records visible at an observation in the spec's item order
/// (type identifier, start, end, sample identity hash, payload hash), paged
/// by SQLite: one sorted statement per type, rows visited one at a time.
struct RecordItems {
    let db: Database
    let observationID: Int64
    let asOf: Int64
    let types: [String]
    let dateFrom: Double?
    let dateTo: Double?
    let includeMetadata: Bool
    /// Whether items need their CSV fields (only the CSV export does) or their JSON.
    var wantCSV = true
    var wantJSON = true
    /// Per type id: observations with a completed run of it, ascending, up to `asOf`.
    var verified: [Int64: [Int64]] = [:]

    init(db: Database, observationID: Int64, asOf: Int64, types: [String], dateFrom: Double?, dateTo: Double?, includeMetadata: Bool) throws {
        self.db = db
        self.observationID = observationID
        self.asOf = asOf
        self.types = types
        self.dateFrom = dateFrom
        self.dateTo = dateTo
        self.includeMetadata = includeMetadata
        for r in try Row.fetchAll(db, sql: """
            SELECT sample_type_id, observation_id FROM observation_type_runs
            WHERE status = 'completed' AND observation_id <= ? ORDER BY sample_type_id, observation_id
            """, arguments: [asOf]) {
            verified[r[0], default: []].append(r[1])
        }
    }

    /// The types in scope, sorted by identifier.
    func typeRows() throws -> [(Int64, String)] {
        let all = try Row.fetchAll(db, sql: "SELECT id, type_identifier FROM sample_types ORDER BY type_identifier").map { ($0[0] as Int64, $0[1] as String) }
        if types.isEmpty { return all }
        for t in types where !all.contains(where: { $0.1 == t }) {
            throw ArchiveError(.notFound, "the archive has no samples of type \(t)")
        }
        return all.filter { types.contains($0.1) }
    }

    static let sql = """
        SELECT s.sample_uuid_hash, s.strict_fingerprint, s.semantic_fingerprint, s.first_seen_observation_id,
               v.payload_hash, v.start_date, v.end_date, v.value_kind, v.numeric_value, v.unit, v.category_value,
               v.workout_activity_type, v.duration_seconds, v.creation_date,
               so.bundle_identifier, so.source_name_hash, sr.product_type, sr.version, sr.operating_system_version,
               d.device_hash, m.metadata_hash, CASE WHEN ?7 THEN m.metadata_json END,
               r.first_observation_id, r.last_observation_id,
               (SELECT e.event_kind || ' ' || ifnull(e.evidence_kind, '') FROM sample_observation_events e
                WHERE r.last_observation_id <= ?8 AND e.observation_id = r.last_observation_id AND e.sample_id = s.id
                  AND e.event_kind IN ('disappeared', 'representation_changed') LIMIT 1),
               so.id
        FROM samples s
        JOIN sample_visibility_ranges r ON r.sample_id = s.id AND r.first_observation_id <= ?1
             AND (r.last_observation_id IS NULL OR r.last_observation_id > ?1)
        JOIN sample_versions v ON v.id = r.version_id
        LEFT JOIN source_revisions sr ON sr.id = v.source_revision_id
        LEFT JOIN sources so ON so.id = sr.source_id
        LEFT JOIN hk_devices d ON d.id = v.hk_device_id
        LEFT JOIN metadata_blobs m ON m.id = v.metadata_id
        WHERE s.sample_type_id = ?2 AND (?3 IS NULL OR v.start_date >= ?4) AND (?5 IS NULL OR v.start_date < ?6)
        ORDER BY v.start_date, v.end_date, coalesce(s.sample_uuid_hash, s.strict_fingerprint), v.payload_hash
        """

    /// Calls `body` for every record in order; stops when it returns false.
    /// Text columns are read as bytes straight from SQLite's row (no `String`
    /// per column); items are byte for byte what the `String` path wrote.
    func forEach(_ body: (RecordItem) throws -> Bool) throws {
        let stmt = try FastStatement(db, Self.sql)
        var w = CanonicalJSONWriter(capacity: 2048)
        var c = CanonicalJSONWriter(capacity: 1024)
        var sourceHashes: [Int64: String] = [:]
        for (typeID, identifier) in try typeRows() {
            let runs = verified[typeID] ?? []
            var more = true
            try stmt.queryWhile(db, [.int(observationID), .int(typeID), .double(dateFrom), .double(dateFrom), .double(dateTo), .double(dateTo),
                                     .int(includeMetadata ? 1 : 0), .int(asOf)]) { r in
                let uuidHash = r.textBytes(0), fp = r.textBytes(1)!, identity = uuidHash ?? fp
                let first = r.int(22)!, last = r.int(23)
                let closed = last.map { $0 <= asOf } ?? false
                // The last observation up to as-of that verified this version visible.
                let bound = closed ? last! - 1 : asOf
                var lastVerified = first
                if let i = Self.lastIndex(runs, atMost: bound), runs[i] >= first { lastVerified = runs[i] }
                var disappeared: JSONValue = .null
                if closed {
                    let ev = (r.text(24) ?? "").split(separator: " ", maxSplits: 1).map(String.init)
                    disappeared = .object(["observation_id": .number(Double(last!)),
                                           "event_kind": ev.first.map(JSONValue.string) ?? .null,
                                           "evidence_kind": ev.count > 1 && !ev[1].isEmpty ? .string(ev[1]) : .null])
                }
                let sourceBundle = r.textBytes(14), sourceName = r.textBytes(15)
                let hasSource = sourceBundle != nil || sourceName != nil
                var sourceHash: String?
                if hasSource {
                    // A source's id names its bundle identifier and name hash.
                    let sourceID = r.int(25) ?? -1
                    if let cached = sourceHashes[sourceID] {
                        sourceHash = cached
                    } else {
                        var sw = CanonicalJSONWriter(capacity: 128)
                        sw.beginObject(); sw.field("bundle_identifier", utf8: sourceBundle); sw.field("name_hash", utf8: sourceName); sw.endObject()
                        sourceHash = ArchiveHasher.sha256(.source, sw.bytes)
                        sourceHashes[sourceID] = sourceHash
                    }
                }
                let start = r.double(5)!, end = r.double(6)!
                var hashAt = 0
                w.reset()
                if wantJSON {
                    w.beginObject()
                    w.field("category_value", r.int(10).map(Int.init))
                    w.key("creation_date"); if let c = r.double(13) { w.writeDate(c) } else { w.writeNull() }
                    w.field("device_hash", utf8: r.textBytes(19))
                    w.key("disappeared"); try w.write(disappeared)
                    try w.field("duration_seconds", r.double(12))
                    w.key("end_date"); w.writeDate(end)
                    w.field("first_seen_observation_id", Int(first))
                    hashAt = w.bytes.count
                    w.field("kind", "record")
                    w.field("last_verified_observation_id", Int(lastVerified))
                    w.key("metadata")
                    if let m = r.text(21), let v = try? JSONParser.parse(m) { try w.write(v) } else { w.writeNull() }
                    w.field("metadata_hash", utf8: r.textBytes(20))
                    try w.field("numeric_value", r.double(8))
                    w.field("observation_id", Int(observationID))
                    w.field("payload_hash", utf8: r.textBytes(4))
                    w.field("sample_first_seen_observation_id", r.int(3).map(Int.init))
                    w.field("sample_identity_hash", utf8: identity)
                    w.field("sample_type_identifier", identifier)
                    w.field("sample_uuid_hash", utf8: uuidHash)
                    w.field("semantic_fingerprint", utf8: r.textBytes(2))
                    w.key("source")
                    if hasSource {
                        w.beginObject(); w.field("bundle_identifier", utf8: sourceBundle); w.field("name_hash", utf8: sourceName); w.endObject()
                    } else { w.writeNull() }
                    w.field("source_hash", sourceHash)
                    w.key("source_revision")
                    let product = r.textBytes(16), version = r.textBytes(17), os = r.textBytes(18)
                    if product != nil || version != nil || os != nil {
                        w.beginObject(); w.field("operating_system_version", utf8: os); w.field("product_type", utf8: product); w.field("version", utf8: version); w.endObject()
                    } else { w.writeNull() }
                    w.key("start_date"); w.writeDate(start)
                    w.field("strict_fingerprint", utf8: fp)
                    w.field("unit", utf8: r.textBytes(9))
                    w.field("value_kind", utf8: r.textBytes(7))
                    w.field("workout_activity_type", r.int(11).map(Int.init))
                    w.endObject()
                }
                // Without `wantJSON` the item is built for CSV only; the hash is spliced in by `RecordItem.sealed`.
                let json: [UInt8] = wantJSON ? w.bytes : []
                var csvHashInput: [UInt8] = [], csvRow: [UInt8] = []
                if wantCSV {
                    let category = r.int(10).map(Int.init), workout = r.int(11).map(Int.init)
                    let numeric = r.double(8), duration = r.double(12)
                    let payload = r.textBytes(4)!, semantic = r.textBytes(2), valueKind = r.textBytes(7), unit = r.textBytes(9)
                    let device = r.textBytes(19), metadataHash = r.textBytes(20)
                    let gone = closed ? Int(last!) : nil
                    c.reset()
                    c.beginObject()
                    c.field("category_value", category)
                    c.field("device_hash", utf8: device)
                    c.field("disappeared_observation_id", gone)
                    try c.field("duration_seconds", duration)
                    c.key("end_date_utc"); c.writeDate(end)
                    c.field("first_seen_observation_id", Int(first))
                    c.field("last_verified_observation_id", Int(lastVerified))
                    c.field("metadata_hash", utf8: metadataHash)
                    try c.field("numeric_value", numeric)
                    c.field("observation_id", Int(observationID))
                    c.field("payload_hash", utf8: payload)
                    c.field("sample_identity_hash", utf8: identity)
                    c.field("sample_type_identifier", identifier)
                    c.field("sample_uuid_hash", utf8: uuidHash)
                    c.field("semantic_fingerprint", utf8: semantic)
                    c.field("source_hash", sourceHash)
                    c.key("start_date_utc"); c.writeDate(start)
                    c.field("strict_fingerprint", utf8: fp)
                    c.field("unit", utf8: unit)
                    c.field("value_kind", utf8: valueKind)
                    c.field("workout_activity_type", workout)
                    c.endObject()
                    csvHashInput = c.bytes
                    var row = CSVRow(capacity: 700)
                    row.cell(String(observationID)); row.cell(identifier); row.cell(identity); row.cell(uuidHash); row.cell(fp)
                    row.cell(semantic); row.cell(payload); row.date(start); row.date(end); row.cell(valueKind)
                    row.number(numeric); row.cell(unit); row.cell(category.map(String.init)); row.cell(workout.map(String.init))
                    row.number(duration); row.cell(sourceHash); row.cell(device); row.cell(metadataHash); row.cell(String(first))
                    row.cell(String(lastVerified)); row.cell(gone.map(String.init))
                    csvRow = row.bytes
                }
                more = try body(RecordItem(typeIdentifier: identifier, json: json, hashAt: hashAt, csvHashInput: csvHashInput, csvRow: csvRow))
                return more
            }
            if !more { return }
        }
    }

    static func lastIndex(_ a: [Int64], atMost x: Int64) -> Int? {
        var lo = 0, hi = a.count
        while lo < hi { let mid = (lo + hi) / 2; if a[mid] <= x { lo = mid + 1 } else { hi = mid } }
        return lo == 0 ? nil : lo - 1
    }
}
