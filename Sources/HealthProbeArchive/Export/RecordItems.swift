import Foundation
import GRDB
import HealthProbeCanonical

/// Exported records of one type written back to back into one buffer, handed
/// from a SQLite reader to the hashing and writing stage a batch at a time.
struct RecordBatch: Sendable {
    /// One record's place in `bytes`. JSON: the item without `item_hash` is
    /// `start..<end`, its `item_hash` member goes at `hashAt`. CSV: the item
    /// hash input (canonical JSON of every column but `export_id` and
    /// `item_hash`) is `start..<hashAt`, the row's cells before `item_hash` are
    /// `hashAt..<tailAt` and those after it (each with its leading comma)
    /// `tailAt..<end`.
    struct Item: Sendable {
        var start: Int
        var hashAt: Int
        var end: Int
        var tailAt: Int
    }

    var bytes: [UInt8]
    var items: [Item]
    /// The records' type identifier.
    var type: String
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
    /// Whether records are written as JSON items or CSV rows.
    enum Form { case json, csv }
    var form = Form.json
    /// Per type id: observations with a completed run of it, ascending, up to `asOf`.
    var verified: [Int64: [Int64]] = [:]
    /// Observations that are captures with a window: their new samples' lateness is known.
    var captures: Set<Int64> = []
    /// The exported observation's local days; nil when the archive does not know its zone.
    var days: LocalDays?
    /// Format 2's human fields and lateness (false: format 1, to reproduce older exports).
    var humanFields = true

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
        captures = try CaptureWindows.captureObservations(db)
        if let z = try Row.fetchOne(db, sql: "SELECT time_zone_identifier, time_zone_seconds_from_gmt FROM observations WHERE id = ?", arguments: [observationID]),
           (z[0] as String?) != nil || (z[1] as Int?) != nil {
            days = LocalDays(identifier: z[0], secondsFromGMT: z[1])
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
        SELECT nullif(lower(hex(s.sample_uuid_hash)), ''), lower(hex(s.strict_fingerprint)), nullif(lower(hex(s.semantic_fingerprint)), ''),
               s.first_seen_observation_id, lower(hex(v.payload_hash)), v.start_date, v.end_date, v.value_kind, v.numeric_value, v.unit, v.category_value,
               v.workout_activity_type, v.duration_seconds, v.creation_date,
               so.bundle_identifier, so.source_name_hash, sr.product_type, sr.version, sr.operating_system_version,
               d.device_hash, m.metadata_hash, CASE WHEN ?7 THEN m.metadata_json END,
               r.first_observation_id, r.last_observation_id,
               (SELECT \(EventKind.nameSQL("e.event_kind")) || ' ' || ifnull(\(EvidenceKind.nameSQL("e.evidence_kind")), '') FROM sample_observation_events e
                WHERE r.last_observation_id <= ?8 AND e.observation_id = r.last_observation_id AND e.sample_id = s.id
                  AND e.event_kind IN (\(EventKind.disappeared.sql), \(EventKind.representationChanged.sql)) LIMIT 1),
               so.id, s.first_seen_at
        FROM samples s INDEXED BY \(SampleIndexes.byTypeAndFingerprint)
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

    /// The same records read through `db` (another connection on the same snapshot).
    func reading(_ db: Database) throws -> RecordItems {
        var copy = try RecordItems(db: db, observationID: observationID, asOf: asOf, types: types, dateFrom: dateFrom, dateTo: dateTo,
                                   includeMetadata: includeMetadata)
        copy.form = form
        copy.humanFields = humanFields
        return copy
    }

    /// Calls `body` with the records of the type at `typeIndex` of `typeRows`,
    /// in order, in batches of `batchSize` (the last may be smaller). Text
    /// columns are read as bytes straight from SQLite's row (no `String` per
    /// column), and every record of a batch goes into one buffer (no
    /// allocation per record).
    func forEach(typeIndex: Int, of typeRows: [(Int64, String)], batchSize: Int, _ body: (RecordBatch) throws -> Void) throws {
        let stmt = try FastStatement(db, Self.sql)
        var out = CanonicalJSONWriter(capacity: batchSize * 1536)
        var items: [RecordBatch.Item] = []
        items.reserveCapacity(batchSize)
        var sourceHashes: [Int64: String] = [:]
        let (typeID, identifier) = typeRows[typeIndex]
        let runs = verified[typeID] ?? []
        let human = HumanFields(typeIdentifier: identifier)
        var localDays = LocalDayCursor(days: days)
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
            let localDay = localDays.day(start)
            // First seen minus the sample's end, for samples a capture with a window saw first.
            let lateness = !captures.isEmpty && r.int(3).map(captures.contains) == true ? r.double(26).map { max($0 - end, 0) } : nil
            let itemStart = out.count
            var hashAt = 0, tailAt = 0
            switch form {
            case .json:
                out.beginObject()
                out.field("category_value", r.int(10).map(Int.init))
                out.key("creation_date"); if let c = r.double(13) { out.writeDate(c) } else { out.writeNull() }
                out.field("device_hash", utf8: r.textBytes(19))
                out.key("disappeared"); try out.write(disappeared)
                if humanFields { out.key("display_name"); out.appendRaw(human.nameJSON); out.key("display_unit"); out.appendRaw(human.unitJSON) }
                try out.field("duration_seconds", r.double(12))
                out.key("end_date"); out.writeDate(end)
                out.field("first_seen_observation_id", Int(first))
                hashAt = out.count
                out.field("kind", "record")
                out.field("last_verified_observation_id", Int(lastVerified))
                if humanFields { try out.field("lateness_seconds", lateness); out.key("local_day"); Self.writeDay(localDay, &out) }
                out.key("metadata")
                if let m = r.text(21), let v = try? JSONParser.parse(m) { try out.write(v) } else { out.writeNull() }
                out.field("metadata_hash", utf8: r.textBytes(20))
                try out.field("numeric_value", r.double(8))
                out.field("observation_id", Int(observationID))
                out.field("payload_hash", utf8: r.textBytes(4))
                out.field("sample_first_seen_observation_id", r.int(3).map(Int.init))
                out.field("sample_identity_hash", utf8: identity)
                out.field("sample_type_identifier", identifier)
                out.field("sample_uuid_hash", utf8: uuidHash)
                out.field("semantic_fingerprint", utf8: r.textBytes(2))
                out.key("source")
                if hasSource {
                    out.beginObject(); out.field("bundle_identifier", utf8: sourceBundle); out.field("name_hash", utf8: sourceName); out.endObject()
                } else { out.writeNull() }
                out.field("source_hash", sourceHash)
                out.key("source_revision")
                let product = r.textBytes(16), version = r.textBytes(17), os = r.textBytes(18)
                if product != nil || version != nil || os != nil {
                    out.beginObject(); out.field("operating_system_version", utf8: os); out.field("product_type", utf8: product); out.field("version", utf8: version); out.endObject()
                } else { out.writeNull() }
                out.key("start_date"); out.writeDate(start)
                out.field("strict_fingerprint", utf8: fp)
                out.field("unit", utf8: r.textBytes(9))
                out.field("value_kind", utf8: r.textBytes(7))
                out.field("workout_activity_type", r.int(11).map(Int.init))
                out.endObject()
            case .csv:
                let category = r.int(10).map(Int.init), workout = r.int(11).map(Int.init)
                let numeric = r.double(8), duration = r.double(12)
                let payload = r.textBytes(4)!, semantic = r.textBytes(2), valueKind = r.textBytes(7), unit = r.textBytes(9)
                let device = r.textBytes(19), metadataHash = r.textBytes(20)
                let gone = closed ? Int(last!) : nil
                out.beginObject()
                out.field("category_value", category)
                out.field("device_hash", utf8: device)
                out.field("disappeared_observation_id", gone)
                if humanFields { out.key("display_name"); out.appendRaw(human.nameJSON); out.key("display_unit"); out.appendRaw(human.unitJSON) }
                try out.field("duration_seconds", duration)
                out.key("end_date_utc"); out.writeDate(end)
                out.field("first_seen_observation_id", Int(first))
                out.field("last_verified_observation_id", Int(lastVerified))
                if humanFields { try out.field("lateness_seconds", lateness); out.key("local_day"); Self.writeDay(localDay, &out) }
                out.field("metadata_hash", utf8: metadataHash)
                try out.field("numeric_value", numeric)
                out.field("observation_id", Int(observationID))
                out.field("payload_hash", utf8: payload)
                out.field("sample_identity_hash", utf8: identity)
                out.field("sample_type_identifier", identifier)
                out.field("sample_uuid_hash", utf8: uuidHash)
                out.field("semantic_fingerprint", utf8: semantic)
                out.field("source_hash", sourceHash)
                out.key("start_date_utc"); out.writeDate(start)
                out.field("strict_fingerprint", utf8: fp)
                out.field("unit", utf8: unit)
                out.field("value_kind", utf8: valueKind)
                out.field("workout_activity_type", workout)
                out.endObject()
                hashAt = out.count
                var row = CSVRow()
                row.int(Int(observationID), &out); row.cell(identifier, &out); row.cell(identity, &out); row.cell(uuidHash, &out)
                row.cell(fp, &out); row.cell(semantic, &out); row.cell(payload, &out); row.date(start, &out); row.date(end, &out)
                row.cell(valueKind, &out); row.number(numeric, &out); row.cell(unit, &out); row.int(category, &out)
                row.int(workout, &out); row.number(duration, &out); row.cell(sourceHash, &out); row.cell(device, &out)
                row.cell(metadataHash, &out); row.int(Int(first), &out); row.int(Int(lastVerified), &out); row.int(gone, &out)
                // Columns 24-27, after the item hash the sink writes at `tailAt`.
                tailAt = out.count
                if humanFields {
                    var tail = CSVRow(following: true)
                    tail.raw(human.nameCell, &out); tail.raw(human.unitCell, &out); tail.raw(localDay ?? [], &out); tail.number(lateness, &out)
                }
            }
            items.append(RecordBatch.Item(start: itemStart, hashAt: hashAt, end: out.count, tailAt: form == .json ? out.count : tailAt))
            if items.count == batchSize { try Self.flush(&out, &items, identifier, body) }
            return true
        }
        try Self.flush(&out, &items, identifier, body)
    }

    /// Hands the batch in `out` and `items` to `body`, then empties both.
    /// (A function of its arguments, not a closure capturing them, so the
    /// writer is not boxed and checked for exclusive access on every write.)
    private static func flush(_ out: inout CanonicalJSONWriter, _ items: inout [RecordBatch.Item], _ type: String,
                              _ body: (RecordBatch) throws -> Void) throws {
        defer { out.reset(); items.removeAll(keepingCapacity: true) }
        if !items.isEmpty { try body(RecordBatch(bytes: out.bytes, items: items, type: type)) }
    }

    /// A local day as a JSON string, or null.
    private static func writeDay(_ day: [UInt8]?, _ out: inout CanonicalJSONWriter) {
        guard let day else { return out.writeNull() }
        out.appendRaw(UInt8(ascii: "\""))
        out.appendRaw(day)
        out.appendRaw(UInt8(ascii: "\""))
    }

    static func lastIndex(_ a: [Int64], atMost x: Int64) -> Int? {
        var lo = 0, hi = a.count
        while lo < hi { let mid = (lo + hi) / 2; if a[mid] <= x { lo = mid + 1 } else { hi = mid } }
        return lo == 0 ? nil : lo - 1
    }
}
