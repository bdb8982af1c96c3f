import Foundation
import GRDB
import HealthProbeCanonical

/// An item given as an object: its hash over the object, then the object with `item_hash`.
func hashedItem(_ o: [String: JSONValue]) throws -> ([UInt8], String) {
    let hash = ArchiveHasher.sha256(.exportItem, try CanonicalJSON.encode(.object(o)))
    var with = o
    with["item_hash"] = .string(hash)
    return (try CanonicalJSON.encode(.object(with)), hash)
}

/// `observation_diff_json` items: one per changed sample, ordered by type,
/// then the (after, else before) version's start, end, identity and payload hash.
enum DiffItems {
    static func version(_ r: Row, _ p: String) -> JSONValue {
        guard (r[p + "id"] as Int64?) != nil else { return .null }
        return .object([
            "payload_hash": .optional(r[p + "payload_hash"] as String?), "start_date": .string(CanonicalDate.string(r[p + "start_date"])),
            "end_date": .string(CanonicalDate.string(r[p + "end_date"])), "value_kind": .optional(r[p + "value_kind"] as String?),
            "numeric_value": .optional(r[p + "numeric_value"] as Double?), "unit": .optional(r[p + "unit"] as String?),
            "category_value": .optional((r[p + "category_value"] as Int64?).map(Int.init)),
            "workout_activity_type": .optional((r[p + "workout_activity_type"] as Int64?).map(Int.init)),
            "duration_seconds": .optional(r[p + "duration_seconds"] as Double?),
            "creation_date": (r[p + "creation_date"] as Double?).map { .string(CanonicalDate.string($0)) } ?? .null,
        ])
    }

    /// `human`: format 2's `display_name` and `display_unit` on every entry (not in 1).
    static func write(_ db: Database, from: Int64, to: Int64, types: [String], human: Bool,
                      emit: ([UInt8], String) throws -> Void) throws -> JSONValue {
        let diff = try ObservationDiff.prepare(db, from: from, to: to)
        let fromIsLo = diff.from <= diff.to
        let beforeCol = fromIsLo ? "lo_version" : "hi_version", afterCol = fromIsLo ? "hi_version" : "lo_version"
        let cols = ["id", "payload_hash", "start_date", "end_date", "value_kind", "numeric_value", "unit", "category_value",
                    "workout_activity_type", "duration_seconds", "creation_date"]
        // The payload hash is stored as 32 bytes: read as hex (NULL when there is no such version).
        func column(_ t: String, _ c: String) -> String { c == "payload_hash" ? "nullif(lower(hex(\(t).\(c))), '') AS \(t)_\(c)" : "\(t).\(c) AS \(t)_\(c)" }
        let select = cols.map { column("b", $0) }.joined(separator: ", ") + ", " + cols.map { column("a", $0) }.joined(separator: ", ")
        let typesJSON = String(decoding: try CanonicalJSON.encode(.array(types.map(JSONValue.string))), as: UTF8.self)
        var byType: [String: [String: Int]] = [:]
        let cursor = try Row.fetchCursor(db, sql: """
            SELECT st.type_identifier, d.kind, lower(hex(coalesce(s.sample_uuid_hash, s.strict_fingerprint))) AS ident, \(select)
            FROM temp.hp_diff d JOIN samples s ON s.id = d.sample_id JOIN sample_types st ON st.id = d.type_id
            LEFT JOIN sample_versions b ON b.id = d.\(beforeCol)
            LEFT JOIN sample_versions a ON a.id = d.\(afterCol)
            WHERE json_array_length(?) = 0 OR st.type_identifier IN (SELECT value FROM json_each(?))
            ORDER BY st.type_identifier, coalesce(a.start_date, b.start_date), coalesce(a.end_date, b.end_date), ident,
                     coalesce(a.payload_hash, b.payload_hash)
            """, arguments: [typesJSON, typesJSON])
        while let r = try cursor.next() {
            let type: String = r["type_identifier"], kind: String = r["kind"]
            byType[type, default: [:]][kind, default: 0] += 1
            var item: [String: JSONValue] = [
                "kind": .string("diff_entry"), "change": .string(kind), "sample_type_identifier": .string(type),
                "sample_identity_hash": .string(r["ident"]), "before": version(r, "b_"), "after": version(r, "a_"),
            ]
            if human { item.merge(TypeCatalogue.info(type).humanMembers()) { a, _ in a } }
            let (json, hash) = try hashedItem(item)
            try emit(json, hash)
        }
        return .object(["by_type": .object(byType.mapValues { .object($0.mapValues { .int($0) }) }),
                        "records": .int(byType.values.reduce(0) { $0 + $1.values.reduce(0, +) })])
    }
}

/// `type_summary_json` items: each type's summary in effect at the
/// observation, followed by its daily rows (local days), by type then day.
enum SummaryItems {
    /// `human`: format 2's `display_name` and `display_unit` on every item, and the
    /// summary's `statistic` (not in 1).
    static func write(_ db: Database, at obs: Int64, types: [String], human: Bool,
                      emit: ([UInt8], String) throws -> Void) throws -> JSONValue {
        var summaries = 0, daily = 0
        for s in try AggregateQueries.summaries(db, at: obs) where types.isEmpty || types.contains(s.typeIdentifier) {
            let date: (Double?) -> JSONValue = { $0.map { .string(CanonicalDate.string($0)) } ?? .null }
            let info = TypeCatalogue.info(s.typeIdentifier)
            var summary: [String: JSONValue] = [
                "kind": .string("type_summary"), "sample_type_identifier": .string(s.typeIdentifier),
                "visible_record_count": .int(s.visibleRecordCount), "earliest_start_date": date(s.earliestStartDate),
                "latest_end_date": date(s.latestEndDate), "value_sum": .optional(s.valueSum), "value_max": .optional(s.valueMax),
                "aggregate_hash": .optional(s.aggregateHash), "summary_observation_id": .int(Int(s.observationID)),
            ]
            if human { summary.merge(info.humanMembers(statistic: true)) { a, _ in a } }
            let (json, hash) = try hashedItem(summary)
            try emit(json, hash)
            summaries += 1
            for d in try AggregateQueries.daily(db, at: obs, typeIdentifier: s.typeIdentifier) {
                var day: [String: JSONValue] = [
                    "kind": .string("daily"), "sample_type_identifier": .string(s.typeIdentifier),
                    "bucket_start": .string(CanonicalDate.string(d.bucketStart)), "bucket_end": .string(CanonicalDate.string(d.bucketEnd)),
                    "visible_record_count": .int(d.visibleRecordCount), "value_sum": .optional(d.valueSum), "value_max": .optional(d.valueMax),
                    "source_revision": .optional(d.sourceRevision), "aggregate_hash": .optional(d.aggregateHash),
                ]
                if human { day.merge(info.humanMembers()) { a, _ in a } }
                let (json, hash) = try hashedItem(day)
                try emit(json, hash)
                daily += 1
            }
        }
        return .object(["records": .int(summaries + daily), "type_summaries": .int(summaries), "daily_rows": .int(daily)])
    }
}

/// `archive_manifest_json` items: every observation of the chain up to as-of,
/// with its type runs, summary hashes and capture windows, then the bundle log.
enum ArchiveManifestItems {
    /// `windows`: each observation item carries its `capture` (format 2; not in 1).
    static func write(_ db: Database, from: Int64, to: Int64, windows: Bool, emit: ([UInt8], String) throws -> Void) throws -> JSONValue {
        var observations = 0, bundles = 0
        let chain = try Int64.fetchOne(db, sql: "SELECT device_chain_id FROM observations WHERE id = ?", arguments: [to]) ?? 0
        let obsCursor = try Row.fetchCursor(db, sql: """
            SELECT * FROM observations WHERE device_chain_id = ? AND id BETWEEN ? AND ? ORDER BY id
            """, arguments: [chain, from, to])
        while let o = try obsCursor.next() {
            let id: Int64 = o["id"]
            let runs = try Row.fetchAll(db, sql: """
                SELECT st.type_identifier, t.run_kind, t.status, t.verified_visible_count, t.inserted_event_count, t.deleted_event_count,
                       t.rejected_record_count, ts.aggregate_hash
                FROM observation_type_runs t JOIN sample_types st ON st.id = t.sample_type_id
                LEFT JOIN observation_type_summaries ts ON ts.observation_id = t.observation_id AND ts.sample_type_id = t.sample_type_id
                WHERE t.observation_id = ? ORDER BY st.type_identifier
                """, arguments: [id]).map { r -> JSONValue in
                .object(["sample_type_identifier": .string(r[0]), "run_kind": .optional(r[1] as String?), "status": .optional(r[2] as String?),
                         "verified_visible_count": .optional((r[3] as Int?)), "inserted_event_count": .optional((r[4] as Int?)),
                         "deleted_event_count": .optional((r[5] as Int?)), "rejected_record_count": .optional((r[6] as Int?)),
                         "aggregate_hash": .optional(r[7] as String?)])
            }
            var item: [String: JSONValue] = [
                "kind": .string("observation"), "observation_id": .int(Int(id)), "observed_at": .string(CanonicalDate.string(o["observed_at"])),
                "status": .string(o["status"]), "trigger_reason": .optional(o["trigger_reason"] as String?),
                "time_zone_identifier": .optional(o["time_zone_identifier"] as String?),
                "time_zone_seconds_from_gmt": .optional(o["time_zone_seconds_from_gmt"] as Int?),
                "schema_version": .optional(o["schema_version"] as Int?), "type_runs": .array(runs),
            ]
            if windows { item["capture"] = try CaptureWindows.exportJSON(db, observationID: id) }
            let (json, hash) = try hashedItem(item)
            try emit(json, hash)
            observations += 1
        }
        for b in try Row.fetchAll(db, sql: """
            SELECT direction, sequence, observation_id, manifest_hash, previous_manifest_hash, item_count FROM bundle_log
            WHERE device_chain_id = ? AND observation_id <= ? ORDER BY direction, sequence
            """, arguments: [chain, to]) {
            let (json, hash) = try hashedItem([
                "kind": .string("bundle"), "direction": .string(b[0]), "sequence": .int(b[1]), "observation_id": .int(b[2]),
                "manifest_hash": .string(b[3]), "previous_manifest_hash": .optional(b[4] as String?), "item_count": .int(b[5]),
            ])
            try emit(json, hash)
            bundles += 1
        }
        return .object(["records": .int(observations + bundles), "observations": .int(observations), "bundles": .int(bundles)])
    }
}
