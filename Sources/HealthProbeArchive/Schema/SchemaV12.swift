/// Migration 12 (docs/decisions/2026-11-25-observation-row-bounds.md): an observation
/// records the largest sample and version ids before it wrote any
/// (`samples_before`, `versions_before`). SQLite gives a new row a rowid above every
/// rowid in its table, so the samples an observation first saw and the versions it
/// created all lie above those bounds: the bundle builder and a revert read them as a
/// rowid range, filtered by observation as before, and `idx_samples_first_seen` and
/// `idx_sample_versions_created` (about 18 bytes a sample, two b-trees written for
/// every new sample) are dropped. Existing observations get, through those indexes
/// before they go, the smallest id they wrote less one (or the table's largest id
/// when they wrote none: no later row can name them).
/// Shipped: never edit; add a new migration instead.
enum SchemaV12 {
    static let version = 12
    static let description = "observations.samples_before and versions_before; idx_samples_first_seen and idx_sample_versions_created dropped"
    static let sql = """
    ALTER TABLE observations ADD COLUMN samples_before INTEGER;
    ALTER TABLE observations ADD COLUMN versions_before INTEGER;
    UPDATE observations SET
        samples_before = coalesce((SELECT min(s.id) - 1 FROM samples s WHERE s.first_seen_observation_id = observations.id),
                                  (SELECT ifnull(max(id), 0) FROM samples)),
        versions_before = coalesce((SELECT min(v.id) - 1 FROM sample_versions v WHERE v.created_observation_id = observations.id),
                                   (SELECT ifnull(max(id), 0) FROM sample_versions));
    DROP INDEX idx_samples_first_seen;
    DROP INDEX idx_sample_versions_created;
    """
}
