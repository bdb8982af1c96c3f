/// Migration 13 (docs/decisions/2026-11-27-version-prefix-unique.md): a version's
/// uniqueness is kept by a UNIQUE index on `(sample_id, substr(payload_hash, 1, 16))`
/// instead of the table constraint `UNIQUE(sample_id, payload_hash)`, which stored the
/// whole 32-byte hash again (about 52 bytes a version, now about 33). The index is
/// stricter than the constraint it replaces: two versions of one sample whose payload
/// hashes share their first 16 bytes (128 bits of SHA-256) are refused, so
/// `(sample_id, payload_hash)` stays unique. Lookups bind the prefix and compare the
/// whole hash in the row (`PageOperations.findVersion`, `BundleApplier`): a prefix
/// shared by another hash finds nothing, and the insert that follows is refused, so the
/// capture or apply fails and rolls back; it never takes one version for another.
/// The table is rebuilt row for row with its ids (bundle items follow ids), with its
/// columns, checks and foreign keys as schema 9 made them.
/// Shipped: never edit; add a new migration instead.
enum SchemaV13 {
    static let version = 13
    static let description = "sample_versions unique on (sample_id, the payload hash's first 16 bytes), replacing UNIQUE(sample_id, payload_hash)"
    static let sql = """
    CREATE TABLE sample_versions_v13 (
        id INTEGER PRIMARY KEY,
        sample_id INTEGER NOT NULL REFERENCES samples(id),
        payload_hash BLOB NOT NULL CHECK (typeof(payload_hash) = 'blob' AND length(payload_hash) = 32),
        start_date REAL NOT NULL,
        end_date REAL NOT NULL,
        value_kind TEXT,
        numeric_value REAL,
        unit TEXT,
        category_value INTEGER,
        workout_activity_type INTEGER,
        duration_seconds REAL,
        source_revision_id INTEGER REFERENCES source_revisions(id),
        hk_device_id INTEGER REFERENCES hk_devices(id),
        metadata_id INTEGER REFERENCES metadata_blobs(id),
        created_observation_id INTEGER NOT NULL REFERENCES observations(id),
        creation_date REAL
    );
    INSERT INTO sample_versions_v13(id, sample_id, payload_hash, start_date, end_date, value_kind, numeric_value, unit, category_value,
        workout_activity_type, duration_seconds, source_revision_id, hk_device_id, metadata_id, created_observation_id, creation_date)
    SELECT id, sample_id, payload_hash, start_date, end_date, value_kind, numeric_value, unit, category_value,
        workout_activity_type, duration_seconds, source_revision_id, hk_device_id, metadata_id, created_observation_id, creation_date
    FROM sample_versions ORDER BY id;
    DROP TABLE sample_versions;
    ALTER TABLE sample_versions_v13 RENAME TO sample_versions;
    CREATE UNIQUE INDEX idx_sample_versions_payload ON sample_versions(sample_id, substr(payload_hash, 1, 16));
    CREATE INDEX idx_sample_versions_time ON sample_versions(start_date, end_date);
    """
}
