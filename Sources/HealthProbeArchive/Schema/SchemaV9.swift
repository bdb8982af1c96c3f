/// Migration 9, the compact schema's hashes
/// (docs/decisions/2026-11-24-compact-schema-v8.md): a sample's UUID hash,
/// strict and semantic fingerprints and a version's payload hash are stored as
/// 32-byte BLOBs instead of 64-character hex TEXT, in the table and again in
/// every index that holds them; the edges (exports, bundles, CLI, JSON) still
/// read and write lower-case hex. A CHECK on each column refuses anything but
/// 32 bytes, so a hash bound as text can never be stored. The UUID and semantic
/// indexes become partial (imports have no UUID, captures no semantic
/// fingerprint; every lookup is an `=`, which implies NOT NULL).
/// `samples` and `sample_versions` are rebuilt row for row with their ids, so
/// every reference and every row order (bundle items follow ids) is unchanged.
/// `export_manifests.schema_version` records the schema an export's header
/// named (its manifest hash covers it), so `verify` can make an export again
/// after a migration; exports already recorded get the version applied when
/// they were made.
/// `hp_unhex32` (StoredHash) refuses any value that is not a hash: the
/// migration then rolls back and leaves the schema-8 archive as it was.
/// Shipped: never edit; add a new migration instead.
enum SchemaV9 {
    static let version = 9
    static let description = "sample hashes as 32-byte BLOBs; partial UUID and semantic-fingerprint indexes; export_manifests.schema_version"
    static let sql = """
    CREATE TABLE samples_v9 (
        id INTEGER PRIMARY KEY,
        sample_type_id INTEGER NOT NULL REFERENCES sample_types(id),
        sample_uuid_hash BLOB CHECK (sample_uuid_hash IS NULL OR (typeof(sample_uuid_hash) = 'blob' AND length(sample_uuid_hash) = 32)),
        strict_fingerprint BLOB NOT NULL CHECK (typeof(strict_fingerprint) = 'blob' AND length(strict_fingerprint) = 32),
        semantic_fingerprint BLOB CHECK (semantic_fingerprint IS NULL OR (typeof(semantic_fingerprint) = 'blob' AND length(semantic_fingerprint) = 32)),
        fuzzy_key TEXT,
        first_seen_observation_id INTEGER NOT NULL REFERENCES observations(id),
        first_seen_at REAL NOT NULL,
        UNIQUE(sample_type_id, strict_fingerprint)
    );
    INSERT INTO samples_v9(id, sample_type_id, sample_uuid_hash, strict_fingerprint, semantic_fingerprint, fuzzy_key, first_seen_observation_id, first_seen_at)
    SELECT id, sample_type_id, hp_unhex32(sample_uuid_hash), hp_unhex32(strict_fingerprint), hp_unhex32(semantic_fingerprint), fuzzy_key,
           first_seen_observation_id, first_seen_at
    FROM samples ORDER BY id;
    DROP TABLE samples;
    ALTER TABLE samples_v9 RENAME TO samples;
    CREATE INDEX idx_samples_uuid_hash ON samples(sample_uuid_hash) WHERE sample_uuid_hash IS NOT NULL;
    CREATE INDEX idx_samples_type_semantic ON samples(sample_type_id, semantic_fingerprint) WHERE semantic_fingerprint IS NOT NULL;
    CREATE INDEX idx_samples_first_seen ON samples(first_seen_observation_id);

    CREATE TABLE sample_versions_v9 (
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
        creation_date REAL,
        UNIQUE(sample_id, payload_hash)
    );
    INSERT INTO sample_versions_v9(id, sample_id, payload_hash, start_date, end_date, value_kind, numeric_value, unit, category_value,
        workout_activity_type, duration_seconds, source_revision_id, hk_device_id, metadata_id, created_observation_id, creation_date)
    SELECT id, sample_id, hp_unhex32(payload_hash), start_date, end_date, value_kind, numeric_value, unit, category_value,
        workout_activity_type, duration_seconds, source_revision_id, hk_device_id, metadata_id, created_observation_id, creation_date
    FROM sample_versions ORDER BY id;
    DROP TABLE sample_versions;
    ALTER TABLE sample_versions_v9 RENAME TO sample_versions;
    CREATE INDEX idx_sample_versions_time ON sample_versions(start_date, end_date);
    CREATE INDEX idx_sample_versions_created ON sample_versions(created_observation_id);

    ALTER TABLE export_manifests ADD COLUMN schema_version INTEGER;
    UPDATE export_manifests SET schema_version = coalesce(
        (SELECT max(m.version) FROM schema_migrations m WHERE m.applied_at <= export_manifests.created_at),
        (SELECT max(version) FROM schema_migrations));
    """
}
