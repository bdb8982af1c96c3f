/// Names of schema indexes that queries name with `INDEXED BY`, and the lookups that
/// depend on an index's shape.
public enum SampleIndexes {
    /// `UNIQUE(sample_type_id, substr(strict_fingerprint, 1, 16))` of `samples`
    /// (schema 14). Strict fingerprints begin with the sample's time
    /// (docs/hashing.md), so walking a type through this index visits samples in
    /// nearly the order they were written, and the per-sample lookups that follow
    /// (ranges, versions, events by sample id) read pages nearly in sequence. The
    /// narrower semantic-fingerprint index SQLite prefers on its own visits them in
    /// random order: 3x slower once the type is larger than the page cache (measured
    /// at 166,667 samples a type). The prefixes are unique within a type, so the
    /// index's order is the whole fingerprints' order (`fingerprintPrefix`).
    static let byTypeAndFingerprint = "idx_samples_type_fingerprint"
    /// SQL of the part of a strict fingerprint that `byTypeAndFingerprint` holds (its
    /// first 16 bytes). Ordering a type's samples by it orders them by the whole
    /// fingerprint, the prefixes being unique in a type.
    public static func fingerprintPrefix(_ column: String) -> String { "substr(\(column), 1, 16)" }
    /// SQL that is true when `column` (a sample's stored strict fingerprint) equals
    /// `value` (a bound or joined fingerprint), written so that SQLite seeks the
    /// prefix in `byTypeAndFingerprint` and compares the whole fingerprint in the row.
    /// Without the prefix term a lookup would read every sample of the type.
    public static func fingerprintMatches(_ column: String, _ value: String) -> String {
        "\(fingerprintPrefix(column)) = \(fingerprintPrefix(value)) AND \(column) = \(value)"
    }
    /// The capture's identity lookup by UUID (a partial index). A first load keeps it.
    static let byUUID = "idx_samples_uuid_hash"
    /// A sample's version by its payload hash: the UNIQUE index holds the hash's first 16
    /// bytes (schema 13), so the lookup binds that prefix and compares the whole hash in
    /// the row. A prefix another hash shares finds nothing (and the insert that follows
    /// is refused by the index). Arguments: sample id, payload hash.
    static let versionByPayload = "SELECT id FROM sample_versions WHERE sample_id = ?1 AND substr(payload_hash, 1, 16) = substr(?2, 1, 16) AND payload_hash = ?2"
}
