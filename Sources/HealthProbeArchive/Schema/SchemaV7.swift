/// Migration 7: what an observation added, by index. Building an observation's
/// bundle selects its new samples (`first_seen_observation_id`) and versions
/// (`created_observation_id`); without these indexes each of those selections
/// scanned the whole table (about 1 s per incremental sync at 1,000,000
/// samples). Both columns grow with time, so inserts append to the index.
/// Shipped: never edit; add a new migration instead.
enum SchemaV7 {
    static let version = 7
    static let description = "indexes on samples.first_seen_observation_id and sample_versions.created_observation_id"
    static let sql = """
    CREATE INDEX idx_samples_first_seen ON samples(first_seen_observation_id);
    CREATE INDEX idx_sample_versions_created ON sample_versions(created_observation_id);
    """
}
