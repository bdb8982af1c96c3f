/// Names of schema indexes that queries name with `INDEXED BY`.
enum SampleIndexes {
    /// `UNIQUE(sample_type_id, strict_fingerprint)` of `samples` (SQLite names
    /// a table's first UNIQUE constraint this way). Strict fingerprints begin
    /// with the sample's time (docs/hashing.md), so walking a type through
    /// this index visits samples in nearly the order they were written, and
    /// the per-sample lookups that follow (ranges, versions, events by sample
    /// id) read pages nearly in sequence. The narrower semantic-fingerprint
    /// index SQLite prefers on its own visits them in random order: 3x slower
    /// once the type is larger than the page cache (measured at 166,667
    /// samples a type).
    static let byTypeAndFingerprint = "sqlite_autoindex_samples_1"
    /// The capture's identity lookup by UUID (a partial index). A first load keeps it.
    static let byUUID = "idx_samples_uuid_hash"
}
