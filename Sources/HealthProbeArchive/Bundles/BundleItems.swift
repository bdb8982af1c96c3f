import Foundation
import GRDB
import HealthProbeCanonical

/// Builds the canonical items of one observation's bundle from the archive:
/// everything that observation added, in a fixed order, streamed from
/// SQLite in one read transaction (Protocol/bundles.md).
public enum ObservationBundleBuilder {
    /// Streams the items of observation `observationID` to `emit(kind, canonicalBytes, itemHash)`
    /// and returns the header, trailer and manifest hash.
    public static func build(_ db: Database, observationID obs: Int64, previousManifestHash: String?,
                             onHeader: (BundleHeader) throws -> Void = { _ in },
                             emit: (BundleItemKind, [UInt8], Digest32) throws -> Void) throws -> (BundleHeader, BundleTrailer, String) {
        guard let o = try Row.fetchOne(db, sql: "SELECT * FROM observations WHERE id = ?", arguments: [obs]) else {
            throw ArchiveError(.notFound, "no observation \(obs)")
        }
        let chainID: Int64 = o["device_chain_id"]
        // Every row the observation wrote has a rowid above these (migration 12).
        let samplesBefore: Int64 = o["samples_before"] ?? 0, versionsBefore: Int64 = o["versions_before"] ?? 0
        let chainHash = try String.fetchOne(db, sql: "SELECT device_chain_hash FROM device_chains WHERE id = ?", arguments: [chainID])!
        let sequence = try Int.fetchOne(db, sql: "SELECT count(*) FROM observations WHERE device_chain_id = ? AND id <= ?", arguments: [chainID, obs])!
        let header = BundleHeader(deviceChainHash: chainHash, sequence: sequence, observationId: obs, previousManifestHash: previousManifestHash)
        var manifest = try ManifestHasher(header: header)
        try onHeader(header)

        func emitItem(_ kind: BundleItemKind, _ bytes: [UInt8]) throws {
            let hash = ArchiveHasher.sha256Digest(.item, bytes)
            manifest.add(itemHash: hash, kind: kind)
            try emit(kind, bytes, hash)
        }
        func item(_ kind: BundleItemKind, _ fields: [String: JSONValue]) throws {
            var f = fields
            f["kind"] = .string(kind.rawValue)
            try emitItem(kind, try CanonicalJSON.encode(.object(f)))
        }
        // The per-sample kinds are written by hand, keys in canonical (UTF-16) order;
        // the committed vectors pin them to what `item(_:_:)` would write.
        var w = CanonicalJSONWriter(capacity: 1024)
        func each(_ sql: String, _ arguments: StatementArguments, _ body: (Row) throws -> Void) throws {
            let cursor = try Row.fetchCursor(db, sql: sql, arguments: arguments)
            while let row = try cursor.next() { try body(row) }
        }
        func d(_ row: Row, _ col: String) -> JSONValue { (row[col] as Double?).map { .string(CanonicalDate.string($0)) } ?? .null }
        func s(_ row: Row, _ col: String) -> JSONValue { .optional(row[col] as String?) }
        func i(_ row: Row, _ col: String) -> JSONValue { (row[col] as Int64?).map { .number(Double($0)) } ?? .null }
        func blob(_ row: Row, _ col: String) -> JSONValue { (row[col] as Data?).map { .string($0.base64EncodedString()) } ?? .null }

        try item(.observation, [
            "observed_at": d(o, "observed_at"), "started_at": d(o, "started_at"), "ended_at": d(o, "ended_at"),
            "status": s(o, "status"), "trigger_reason": s(o, "trigger_reason"), "app_version": s(o, "app_version"),
            "os_version": s(o, "os_version"), "time_zone_identifier": s(o, "time_zone_identifier"),
            "time_zone_seconds_from_gmt": i(o, "time_zone_seconds_from_gmt"), "schema_version": i(o, "schema_version"),
            "selected_type_set_hash": s(o, "selected_type_set_hash"), "notes": s(o, "notes"),
        ])
        try each("""
            SELECT DISTINCT st.type_identifier, st.display_name, st.category FROM sample_types st
            WHERE st.id IN (SELECT sample_type_id FROM observation_type_runs WHERE observation_id = ?
                            UNION SELECT sample_type_id FROM samples WHERE id > ? AND first_seen_observation_id = ?)
            ORDER BY st.type_identifier
            """, [obs, samplesBefore, obs]) { r in
            try item(.sampleType, ["type_identifier": s(r, "type_identifier"), "display_name": s(r, "display_name"), "category": s(r, "category")])
        }
        // Provenance referenced by the versions this observation created.
        try each("""
            SELECT DISTINCT so.id, so.source_name_hash, so.bundle_identifier FROM sample_versions v
            JOIN source_revisions sr ON sr.id = v.source_revision_id JOIN sources so ON so.id = sr.source_id
            WHERE v.id > ? AND v.created_observation_id = ? ORDER BY so.id
            """, [versionsBefore, obs]) { r in
            try item(.source, ["source_name_hash": s(r, "source_name_hash"), "bundle_identifier": s(r, "bundle_identifier")])
        }
        try each("""
            SELECT DISTINCT sr.id, so.source_name_hash, so.bundle_identifier, sr.product_type, sr.version, sr.operating_system_version
            FROM sample_versions v JOIN source_revisions sr ON sr.id = v.source_revision_id JOIN sources so ON so.id = sr.source_id
            WHERE v.id > ? AND v.created_observation_id = ? ORDER BY sr.id
            """, [versionsBefore, obs]) { r in
            try item(.sourceRevision, ["source": .object(["source_name_hash": s(r, "source_name_hash"), "bundle_identifier": s(r, "bundle_identifier")]),
                                         "product_type": s(r, "product_type"), "version": s(r, "version"),
                                         "operating_system_version": s(r, "operating_system_version")])
        }
        try each("""
            SELECT DISTINCT h.* FROM sample_versions v JOIN hk_devices h ON h.id = v.hk_device_id
            WHERE v.id > ? AND v.created_observation_id = ? ORDER BY h.id
            """, [versionsBefore, obs]) { r in
            try item(.device, ["device_hash": s(r, "device_hash"), "manufacturer_hash": s(r, "manufacturer_hash"), "model": s(r, "model"),
                                "hardware_version": s(r, "hardware_version"), "firmware_version": s(r, "firmware_version"),
                                "software_version": s(r, "software_version"), "local_identifier_hash": s(r, "local_identifier_hash"),
                                "udi_hash": s(r, "udi_hash")])
        }
        try each("""
            SELECT DISTINCT m.id, m.metadata_hash, m.metadata_json FROM sample_versions v JOIN metadata_blobs m ON m.id = v.metadata_id
            WHERE v.id > ? AND v.created_observation_id = ? ORDER BY m.id
            """, [versionsBefore, obs]) { r in
            try item(.metadata, ["metadata_hash": s(r, "metadata_hash"), "metadata_json": s(r, "metadata_json")])
        }
        // The four per-sample kinds: columns by position, text straight from
        // SQLite's row (no `Row` name lookups, no `String` per column), stored
        // hashes read as bytes and written as hex digits (not through SQL's hex()).
        try FastStatement(db, """
            SELECT s.first_seen_at, s.fuzzy_key, s.sample_uuid_hash, s.semantic_fingerprint, s.strict_fingerprint, st.type_identifier
            FROM samples s JOIN sample_types st ON st.id = s.sample_type_id
            WHERE s.id > ? AND s.first_seen_observation_id = ? ORDER BY s.id
            """).query(db, [.int(samplesBefore), .int(obs)]) { r in
            w.reset()
            w.beginObject()
            Self.date(&w, "first_seen_at", r, 0)
            w.field("fuzzy_key", utf8: r.textBytes(1))
            w.field("kind", "sample")
            w.field("sample_uuid_hash", hex: r.bytes(2, emptyIsNull: true))
            w.field("semantic_fingerprint", hex: r.bytes(3, emptyIsNull: true))
            w.field("strict_fingerprint", hex: r.bytes(4))
            w.field("type_identifier", utf8: r.textBytes(5))
            w.endObject()
            try emitItem(.sample, w.bytes)
        }
        try FastStatement(db, """
            SELECT st.type_identifier, s.strict_fingerprint, v.source_revision_id, v.category_value, v.creation_date, h.device_hash,
                   v.duration_seconds, v.end_date, m.metadata_hash, v.numeric_value, so.bundle_identifier, so.source_name_hash,
                   sr.operating_system_version, sr.product_type, sr.version, v.start_date, v.unit, v.value_kind,
                   v.workout_activity_type, v.payload_hash
            FROM sample_versions v JOIN samples s ON s.id = v.sample_id JOIN sample_types st ON st.id = s.sample_type_id
            LEFT JOIN source_revisions sr ON sr.id = v.source_revision_id LEFT JOIN sources so ON so.id = sr.source_id
            LEFT JOIN hk_devices h ON h.id = v.hk_device_id LEFT JOIN metadata_blobs m ON m.id = v.metadata_id
            WHERE v.id > ? AND v.created_observation_id = ? ORDER BY v.id
            """).query(db, [.int(versionsBefore), .int(obs)]) { r in
            let hasRevision = !r.isNull(2)
            w.reset()
            w.beginObject()
            w.field("kind", "version")
            w.key("payload")
            w.beginObject()
            w.field("category_value", r.int(3).map(Int.init))
            Self.date(&w, "creation_date", r, 4)
            w.field("device_hash", utf8: r.textBytes(5))
            try w.field("duration_seconds", r.double(6))
            Self.date(&w, "end_date", r, 7)
            w.field("metadata_hash", utf8: r.textBytes(8))
            try w.field("numeric_value", r.double(9))
            w.key("source")
            if hasRevision {
                w.beginObject()
                w.field("bundle_identifier", utf8: r.textBytes(10))
                w.field("name_hash", utf8: r.textBytes(11))
                w.endObject()
            } else { w.writeNull() }
            w.key("source_revision")
            if hasRevision {
                w.beginObject()
                w.field("operating_system_version", utf8: r.textBytes(12))
                w.field("product_type", utf8: r.textBytes(13))
                w.field("version", utf8: r.textBytes(14))
                w.endObject()
            } else { w.writeNull() }
            Self.date(&w, "start_date", r, 15)
            w.field("type", utf8: r.textBytes(0))
            w.field("unit", utf8: r.textBytes(16))
            w.field("value_kind", utf8: r.textBytes(17))
            w.field("workout_activity_type", r.int(18).map(Int.init))
            w.endObject()
            w.field("payload_hash", hex: r.bytes(19))
            Self.sampleRef(&w, r, type: 0, fingerprint: 1)
            w.endObject()
            try emitItem(.version, w.bytes)
        }
        try FastStatement(db, """
            SELECT st.type_identifier, s.strict_fingerprint, \(EventKind.nameSQL("e.event_kind")), \(EvidenceKind.nameSQL("e.evidence_kind")), e.observed_at, v.payload_hash
            FROM sample_observation_events e JOIN samples s ON s.id = e.sample_id JOIN sample_types st ON st.id = s.sample_type_id
            LEFT JOIN sample_versions v ON v.id = e.version_id
            WHERE e.observation_id = ? ORDER BY e.id
            """).query(db, [.int(obs)]) { r in
            w.reset()
            w.beginObject()
            w.field("event_kind", utf8: r.textBytes(2))
            w.field("evidence_kind", utf8: r.textBytes(3))
            w.field("kind", "event")
            Self.date(&w, "observed_at", r, 4)
            w.field("payload_hash", hex: r.bytes(5, emptyIsNull: true))
            Self.sampleRef(&w, r, type: 0, fingerprint: 1)
            w.endObject()
            try emitItem(.event, w.bytes)
        }
        try FastStatement(db, """
            SELECT st.type_identifier, s.strict_fingerprint, g.first_seen_at, v.payload_hash
            FROM sample_visibility_ranges g JOIN samples s ON s.id = g.sample_id JOIN sample_types st ON st.id = s.sample_type_id
            LEFT JOIN sample_versions v ON v.id = g.version_id
            WHERE g.first_observation_id = ? ORDER BY g.rowid
            """).query(db, [.int(obs)]) { r in
            w.reset()
            w.beginObject()
            Self.date(&w, "first_seen_at", r, 2)
            w.field("kind", "range_open")
            w.field("payload_hash", hex: r.bytes(3, emptyIsNull: true))
            Self.sampleRef(&w, r, type: 0, fingerprint: 1)
            w.endObject()
            try emitItem(.rangeOpen, w.bytes)
        }
        try each("""
            SELECT st.type_identifier, lower(hex(s.strict_fingerprint)) AS strict_fingerprint, nullif(lower(hex(v.payload_hash)), '') AS payload_hash, g.last_seen_at,
                   (SELECT count(*) FROM observations o2 WHERE o2.device_chain_id = ? AND o2.id <= g.first_observation_id) AS first_sequence
            FROM sample_visibility_ranges g JOIN samples s ON s.id = g.sample_id JOIN sample_types st ON st.id = s.sample_type_id
            LEFT JOIN sample_versions v ON v.id = g.version_id
            WHERE g.last_observation_id = ? ORDER BY g.rowid
            """, [chainID, obs]) { r in
            try item(.rangeClose, ["sample": sampleRef(r), "payload_hash": s(r, "payload_hash"), "first_sequence": i(r, "first_sequence"),
                                     "last_seen_at": d(r, "last_seen_at")])
        }
        try each("""
            SELECT pst.type_identifier AS source_type, lower(hex(p.strict_fingerprint)) AS source_fp, cst.type_identifier AS target_type,
                   lower(hex(c.strict_fingerprint)) AS target_fp, x.relationship_kind, m.metadata_hash
            FROM sample_relationships x JOIN samples p ON p.id = x.source_sample_id JOIN sample_types pst ON pst.id = p.sample_type_id
            JOIN samples c ON c.id = x.target_sample_id JOIN sample_types cst ON cst.id = c.sample_type_id
            LEFT JOIN metadata_blobs m ON m.id = x.metadata_id
            WHERE x.observation_id = ? ORDER BY x.id
            """, [obs]) { r in
            try item(.relationship, ["source": .object(["type": s(r, "source_type"), "strict_fingerprint": s(r, "source_fp")]),
                                      "target": .object(["type": s(r, "target_type"), "strict_fingerprint": s(r, "target_fp")]),
                                      "relationship_kind": s(r, "relationship_kind"), "metadata_hash": s(r, "metadata_hash")])
        }
        try each("""
            SELECT st.type_identifier, t.* FROM observation_type_runs t JOIN sample_types st ON st.id = t.sample_type_id
            WHERE t.observation_id = ? ORDER BY t.id
            """, [obs]) { r in
            try item(.typeRun, ["type_identifier": s(r, "type_identifier"), "status": s(r, "status"), "run_kind": s(r, "run_kind"),
                                  "started_at": d(r, "started_at"), "ended_at": d(r, "ended_at"), "anchor_before": blob(r, "anchor_before"),
                                  "anchor_after": blob(r, "anchor_after"), "inserted_event_count": i(r, "inserted_event_count"),
                                  "deleted_event_count": i(r, "deleted_event_count"), "verified_visible_count": i(r, "verified_visible_count"),
                                  "rejected_record_count": i(r, "rejected_record_count"), "error_kind": s(r, "error_kind"),
                                  "error_message_hash": s(r, "error_message_hash")])
        }
        let trailer = manifest.trailer
        return (header, trailer, try manifest.finish())
    }

    static func sampleRef(_ r: Row) -> JSONValue {
        .object(["type": .optional(r["type_identifier"] as String?), "strict_fingerprint": .optional(r["strict_fingerprint"] as String?)])
    }

    /// `"key":` and the date in column `col` (null when NULL).
    static func date(_ w: inout CanonicalJSONWriter, _ k: StaticString, _ r: FastStatement, _ col: Int32) {
        w.key(k)
        if let v = r.double(col) { w.writeDate(v) } else { w.writeNull() }
    }

    /// `"sample":{"strict_fingerprint":...,"type":...}` from two columns.
    static func sampleRef(_ w: inout CanonicalJSONWriter, _ r: FastStatement, type: Int32, fingerprint: Int32) {
        w.key("sample")
        w.beginObject()
        w.field("strict_fingerprint", hex: r.bytes(fingerprint))
        w.field("type", utf8: r.textBytes(type))
        w.endObject()
    }
}
