/// Migration 11 (docs/decisions/2026-11-25-semantic-prefix-index.md): the semantic
/// fingerprint index keeps the first 8 bytes of each fingerprint, not all 32. It is a
/// lookup index, not a constraint: its one query (the importer's edit matching) finds
/// the candidates by type and prefix and compares the whole fingerprint in the row,
/// which it reads anyway. About 24 bytes a sample less on an imported archive.
/// Shipped: never edit; add a new migration instead.
enum SchemaV11 {
    static let version = 11
    static let description = "idx_samples_type_semantic on the semantic fingerprint's first 8 bytes"
    static let sql = """
    DROP INDEX idx_samples_type_semantic;
    CREATE INDEX idx_samples_type_semantic ON samples(sample_type_id, substr(semantic_fingerprint, 1, 8)) WHERE semantic_fingerprint IS NOT NULL;
    """
}
