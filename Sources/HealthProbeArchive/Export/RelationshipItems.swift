import Foundation
import GRDB
import HealthProbeCanonical

/// Relationships whose both ends are exported records (visible at the
/// observation and inside the filters), after the records, ordered by source
/// type, source identity, target type, target identity, kind and observation.
struct RelationshipItems {
    let db: Database
    let observationID: Int64
    let types: [String]
    let dateFrom: Double?
    let dateTo: Double?

    static func endpoint(_ s: String) -> String {
        """
        EXISTS (SELECT 1 FROM sample_visibility_ranges r JOIN sample_versions v ON v.id = r.version_id
                WHERE r.sample_id = \(s).id AND r.first_observation_id <= ?1 AND (r.last_observation_id IS NULL OR r.last_observation_id > ?1)
                  AND (?3 IS NULL OR v.start_date >= ?3) AND (?4 IS NULL OR v.start_date < ?4))
        """
    }

    /// Canonical relationship item without `item_hash`.
    static func item(kind: String, observation: Int64?, metadataHash: String?, sourceType: String, sourceIdentity: String,
                     targetType: String, targetIdentity: String) -> [UInt8] {
        var w = CanonicalJSONWriter(capacity: 512)
        w.beginObject()
        w.field("kind", "relationship")
        w.field("metadata_hash", metadataHash)
        w.field("observation_id", observation.map(Int.init))
        w.field("relationship_kind", kind)
        w.field("source_identity_hash", sourceIdentity)
        w.field("source_type_identifier", sourceType)
        w.field("target_identity_hash", targetIdentity)
        w.field("target_type_identifier", targetType)
        w.endObject()
        return w.bytes
    }

    /// Inserts `"item_hash":"..."` first (it sorts before `kind`).
    static func withHash(_ item: [UInt8], _ hash: String) -> [UInt8] {
        Array("{\"item_hash\":\"\(hash)\",".utf8) + item.dropFirst()
    }

    /// Calls `body` with (canonical item with hash, item hash, CSV fields) for each relationship.
    func forEach(_ body: ([UInt8], String, [JSONValue]) throws -> Bool) throws {
        let typesJSON = String(decoding: try CanonicalJSON.encode(.array(types.map(JSONValue.string))), as: UTF8.self)
        let stmt = try FastStatement(db, """
            SELECT rel.relationship_kind, rel.observation_id, m.metadata_hash,
                   st1.type_identifier, lower(hex(coalesce(s1.sample_uuid_hash, s1.strict_fingerprint))),
                   st2.type_identifier, lower(hex(coalesce(s2.sample_uuid_hash, s2.strict_fingerprint)))
            FROM sample_relationships rel
            JOIN samples s1 ON s1.id = rel.source_sample_id JOIN sample_types st1 ON st1.id = s1.sample_type_id
            JOIN samples s2 ON s2.id = rel.target_sample_id JOIN sample_types st2 ON st2.id = s2.sample_type_id
            LEFT JOIN metadata_blobs m ON m.id = rel.metadata_id
            WHERE (rel.observation_id IS NULL OR rel.observation_id <= ?1)
              AND (json_array_length(?2) = 0 OR (st1.type_identifier IN (SELECT value FROM json_each(?2))
                                                  AND st2.type_identifier IN (SELECT value FROM json_each(?2))))
              AND \(Self.endpoint("s1")) AND \(Self.endpoint("s2"))
            ORDER BY 4, 5, 6, 7, 1, 2
            """)
        try stmt.queryWhile(db, [.int(observationID), .text(typesJSON), .double(dateFrom), .double(dateTo)]) { r in
            let item = Self.item(kind: r.text(0)!, observation: r.int(1), metadataHash: r.text(2), sourceType: r.text(3)!,
                                 sourceIdentity: r.text(4)!, targetType: r.text(5)!, targetIdentity: r.text(6)!)
            let hash = ArchiveHasher.sha256(.exportItem, item)
            let csv: [JSONValue] = [.string(r.text(0)!), .optional(r.int(1).map(Int.init)), .string(r.text(3)!), .string(r.text(4)!),
                                    .string(r.text(5)!), .string(r.text(6)!), .optional(r.text(2))]
            return try body(Self.withHash(item, hash), hash, csv)
        }
    }
}
