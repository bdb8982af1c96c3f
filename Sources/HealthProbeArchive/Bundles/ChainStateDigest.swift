import GRDB
import HealthProbeCanonical

/// A SHA-256 over the canonical items visible at an observation: for each
/// visible sample, in (type, strict fingerprint) order, the canonical JSON
/// `{"payload_hash","sample_uuid_hash","strict_fingerprint","type"}` and a
/// newline, after the domain prefix `hp:v2:chain_state:`. A node and its
/// server replica give the same digest for the same observation exactly when
/// they agree on what was visible then.
public enum ChainStateDigest {
    public struct Result: Sendable, Equatable, Codable {
        public var digest: String
        public var visibleCount: Int

        public init(digest: String, visibleCount: Int) {
            self.digest = digest
            self.visibleCount = visibleCount
        }
    }

    /// The digest at observation `observationID` of this archive.
    public static func compute(_ db: Database, observationID obs: Int64) throws -> Result {
        guard let chain = try Int64.fetchOne(db, sql: "SELECT device_chain_id FROM observations WHERE id = ?", arguments: [obs]) else {
            throw ArchiveError(.notFound, "no observation \(obs)")
        }
        var stream = SHA256Stream(domain: .chainState)
        var count = 0
        let cursor = try Row.fetchCursor(db, sql: """
            SELECT st.type_identifier, lower(hex(s.strict_fingerprint)), nullif(lower(hex(s.sample_uuid_hash)), ''), nullif(lower(hex(v.payload_hash)), '')
            FROM sample_visibility_ranges r
            JOIN observations fo ON fo.id = r.first_observation_id AND fo.device_chain_id = ?
            JOIN samples s ON s.id = r.sample_id JOIN sample_types st ON st.id = s.sample_type_id
            LEFT JOIN sample_versions v ON v.id = r.version_id
            WHERE r.first_observation_id <= ? AND (r.last_observation_id IS NULL OR r.last_observation_id > ?)
            ORDER BY st.type_identifier, s.strict_fingerprint
            """, arguments: [chain, obs, obs])
        while let r = try cursor.next() {
            var w = CanonicalJSONWriter(capacity: 256)
            w.beginObject()
            w.field("payload_hash", r[3] as String?)
            w.field("sample_uuid_hash", r[2] as String?)
            w.field("strict_fingerprint", r[1] as String?)
            w.field("type", r[0] as String?)
            w.endObject()
            stream.update(w.bytes)
            stream.update([0x0A])
            count += 1
        }
        return Result(digest: stream.finalize(), visibleCount: count)
    }
}
