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
    /// The lines are sorted by SQLite (a temporary b-tree), whose sorter may hold as much
    /// memory as the page cache is allowed, on top of the cache: the cache is bounded to
    /// `sorterKiB` meanwhile, as it is while deferred indexes are built (`DeferredIndexes`).
    public static func compute(_ db: Database, observationID obs: Int64) throws -> Result {
        try db.withBoundedCache(kib: sorterKiB) { try digest(db, observationID: obs) }
    }

    /// The page cache (and so the sorter's memory) while the digest's lines are sorted, in KiB.
    static let sorterKiB = 8 * 1024

    private static func digest(_ db: Database, observationID obs: Int64) throws -> Result {
        guard let chain = try Int64.fetchOne(db, sql: "SELECT device_chain_id FROM observations WHERE id = ?", arguments: [obs]) else {
            throw ArchiveError(.notFound, "no observation \(obs)")
        }
        var stream = SHA256Stream(domain: .chainState)
        var count = 0
        // Stored bytes, hex-encoded here (not by SQLite), each line written into one
        // buffer hashed every 64 KiB: a million visible samples took seconds as rows of strings.
        let rows = try FastStatement(db, """
            SELECT st.type_identifier, s.strict_fingerprint, s.sample_uuid_hash, v.payload_hash
            FROM sample_visibility_ranges r
            JOIN observations fo ON fo.id = r.first_observation_id AND fo.device_chain_id = ?
            JOIN samples s ON s.id = r.sample_id JOIN sample_types st ON st.id = s.sample_type_id
            LEFT JOIN sample_versions v ON v.id = r.version_id
            WHERE r.first_observation_id <= ? AND (r.last_observation_id IS NULL OR r.last_observation_id > ?)
            ORDER BY st.type_identifier, s.strict_fingerprint
            """)
        var w = CanonicalJSONWriter(capacity: Self.flushBytes + 1024)
        let none = UnsafeRawBufferPointer(start: nil, count: 0)
        rows.bind([.int(chain), .int(obs), .int(obs)])
        defer { rows.reset() }
        while try rows.step(db) {
            let r = rows
            w.beginObject()
            // As `nullif(lower(hex(x)), '')`: null when absent or empty.
            w.field("payload_hash", hex: r.bytes(3, emptyIsNull: true))
            w.field("sample_uuid_hash", hex: r.bytes(2, emptyIsNull: true))
            // As `lower(hex(x))`: empty text when absent.
            w.field("strict_fingerprint", hex: r.bytes(1) ?? none)
            w.field("type", utf8: r.textBytes(0))
            w.endObject()
            w.appendRaw(0x0A)
            count += 1
            if w.count >= Self.flushBytes {
                w.withBytes { stream.update(bufferPointer: UnsafeRawBufferPointer($0)) }
                w.reset()
            }
        }
        w.withBytes { stream.update(bufferPointer: UnsafeRawBufferPointer($0)) }
        return Result(digest: stream.finalize(), visibleCount: count)
    }

    /// Lines are hashed in runs of about this many bytes.
    static let flushBytes = 64 << 10
}
