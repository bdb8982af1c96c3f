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
    /// SQLite may sort on up to `sorterThreads` helper threads meanwhile (`PRAGMA threads`,
    /// restored after), each with a sort buffer of its own.
    public static func compute(_ db: Database, observationID obs: Int64) throws -> Result {
        try compute(db, observationID: obs, chunkBytes: chunkBytes)
    }

    /// The same, handing rows to the hashing thread `chunkBytes` at a time (tests pass a few).
    static func compute(_ db: Database, observationID obs: Int64, chunkBytes: Int) throws -> Result {
        try db.withBoundedCache(kib: sorterKiB) {
            let saved = try Int.fetchOne(db, sql: "PRAGMA threads") ?? 0
            try db.execute(sql: "PRAGMA threads = \(sorterThreads)")
            defer { try? db.execute(sql: "PRAGMA threads = \(saved)") }
            return try digest(db, observationID: obs, chunkBytes: chunkBytes)
        }
    }

    /// Helper threads SQLite may sort the digest's lines on (`PRAGMA threads`): at a million
    /// visible samples, 0.92-1.03 s against 1.13-1.20 s without, 17 MB more at the peak
    /// (docs/restore-measurements.md).
    static let sorterThreads = 2

    /// The page cache (and so the sorter's memory) while the digest's lines are sorted, in KiB.
    static let sorterKiB = 8 * 1024

    private static func digest(_ db: Database, observationID obs: Int64, chunkBytes: Int) throws -> Result {
        guard let chain = try Int64.fetchOne(db, sql: "SELECT device_chain_id FROM observations WHERE id = ?", arguments: [obs]) else {
            throw ArchiveError(.notFound, "no observation \(obs)")
        }
        var count = 0
        let rows = try FastStatement(db, """
            SELECT st.type_identifier, s.strict_fingerprint, s.sample_uuid_hash, v.payload_hash
            FROM sample_visibility_ranges r
            JOIN observations fo ON fo.id = r.first_observation_id AND fo.device_chain_id = ?
            JOIN samples s ON s.id = r.sample_id JOIN sample_types st ON st.id = s.sample_type_id
            LEFT JOIN sample_versions v ON v.id = r.version_id
            WHERE r.first_observation_id <= ? AND (r.last_observation_id IS NULL OR r.last_observation_id > ?)
            ORDER BY st.type_identifier, s.strict_fingerprint
            """)
        // This thread steps the sorted rows and copies their stored bytes into chunks; a
        // thread beside it writes each line and hashes it (`DigestLines`), about a
        // quarter of the work, which the caller's thread would otherwise do after each row.
        let lines = DigestLines()
        let hashing = ConsumerStage<[UInt8]>(name: "healthprobe.chain-state-digest", depth: Self.chunksInFlight) { lines.add($0) }
        var chunk = DigestLines.Chunk(capacity: chunkBytes)
        rows.bind([.int(chain), .int(obs), .int(obs)])
        defer { rows.reset() }
        do {
            while try rows.step(db) {
                // As `lower(hex(x))` for the fingerprint (empty text when absent), as
                // `nullif(lower(hex(x)), '')` for the hashes (null when absent or empty).
                chunk.append(rows.textBytes(0).map(UnsafeRawBufferPointer.init))
                chunk.append(rows.bytes(1) ?? UnsafeRawBufferPointer(start: nil, count: 0))
                chunk.append(rows.bytes(2, emptyIsNull: true))
                chunk.append(rows.bytes(3, emptyIsNull: true))
                count += 1
                if chunk.bytes.count >= chunkBytes {
                    try hashing.submit(chunk.bytes)
                    chunk = DigestLines.Chunk(capacity: chunkBytes)
                }
            }
            if !chunk.bytes.isEmpty { try hashing.submit(chunk.bytes) }
            try hashing.finish()
        } catch {
            hashing.cancel()
            throw error
        }
        return Result(digest: lines.finalize(), visibleCount: count)
    }

    /// Rows are handed to the hashing thread in chunks of about this many bytes, at most
    /// `chunksInFlight` waiting: about a megabyte, whatever the archive's size.
    static let chunkBytes = 256 << 10
    static let chunksInFlight = 4
}

/// The hashing side of a chain-state digest: chunks of rows (each a type identifier,
/// strict fingerprint, sample UUID hash and payload hash, stored bytes) made into the
/// digest's canonical lines, in order, and hashed every 64 KiB. Used by the digest's
/// `ConsumerStage` only, until `finish` joined its thread; then `finalize`.
final class DigestLines {
    /// Rows as the stepping thread copies them: each field a 32-bit little-endian length
    /// (`absent` for NULL) and its bytes.
    struct Chunk {
        var bytes: [UInt8]
        init(capacity: Int) {
            bytes = []
            bytes.reserveCapacity(capacity + 1024)
        }
        mutating func append(_ field: UnsafeRawBufferPointer?) {
            guard let field else { return put(DigestLines.absent) }
            put(UInt32(truncatingIfNeeded: field.count))
            bytes.append(contentsOf: field.assumingMemoryBound(to: UInt8.self))  // contiguous: one copy
        }
        private mutating func put(_ n: UInt32) {
            withUnsafeBytes(of: n.littleEndian) { bytes.append(contentsOf: $0) }
        }
    }

    static let absent = UInt32.max
    private var stream = SHA256Stream(domain: .chainState)
    private var w = CanonicalJSONWriter(capacity: flushBytes + 1024)

    /// Lines are hashed in runs of about this many bytes.
    static let flushBytes = 64 << 10

    /// The chunk's rows as lines, hashed as they fill the buffer.
    func add(_ chunk: [UInt8]) {
        chunk.withUnsafeBytes { raw in
            var at = 0
            /// The next field: nil when absent. A chunk is made by `Chunk` alone, whole.
            func field() -> UnsafeRawBufferPointer? {
                let n = raw.loadUnaligned(fromByteOffset: at, as: UInt32.self).littleEndian
                at += 4
                guard n != DigestLines.absent else { return nil }
                defer { at += Int(n) }
                return UnsafeRawBufferPointer(rebasing: raw[at..<at + Int(n)])
            }
            while at < raw.count {
                let type = field(), fingerprint = field(), uuid = field(), payload = field()
                w.beginObject()
                w.field("payload_hash", hex: payload)
                w.field("sample_uuid_hash", hex: uuid)
                w.field("strict_fingerprint", hex: fingerprint)
                w.field("type", utf8: type.map { $0.assumingMemoryBound(to: UInt8.self) })
                w.endObject()
                w.appendRaw(0x0A)
                if w.count >= Self.flushBytes {
                    w.withBytes { stream.update(bufferPointer: UnsafeRawBufferPointer($0)) }
                    w.reset()
                }
            }
        }
    }

    /// The digest of every line added (call once, after the stage finished).
    func finalize() -> String {
        w.withBytes { stream.update(bufferPointer: UnsafeRawBufferPointer($0)) }
        w.reset()
        return stream.finalize()
    }
}
