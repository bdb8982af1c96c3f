/// Migration 8, the first step of the compact schema
/// (docs/decisions/2026-11-24-compact-schema-v8.md): `idx_sample_versions_sample`
/// goes. It indexed `sample_versions(sample_id)`, a prefix of the index of
/// `UNIQUE(sample_id, payload_hash)`, which serves every lookup by sample
/// (`SchemaPlanTests`): 13 bytes and one B-tree write less per version.
/// Shipped: never edit; add a new migration instead.
enum SchemaV8 {
    static let version = 8
    static let description = "drop idx_sample_versions_sample (covered by UNIQUE(sample_id, payload_hash))"
    static let sql = """
    DROP INDEX IF EXISTS idx_sample_versions_sample;
    """
}
