/// Migration 3: `sample_versions.creation_date`. The payload hash covers the
/// source's creation date (Apple Health exports carry it), so it must be
/// stored too: a payload hash is computed only from stored values.
/// Shipped: never edit; add a new migration instead.
enum SchemaV3 {
    static let version = 3
    static let description = "sample_versions.creation_date"
    static let sql = """
    ALTER TABLE sample_versions ADD COLUMN creation_date REAL;
    """
}
