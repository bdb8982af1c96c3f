/// Migration 14 (docs/decisions/2026-11-27-fingerprint-prefix-unique.md): a sample's
/// identity is kept unique by a UNIQUE index on `(sample_type_id,
/// substr(strict_fingerprint, 1, 16))` instead of the table constraint
/// `UNIQUE(sample_type_id, strict_fingerprint)`, which stored the whole 32-byte
/// fingerprint again (about 47 bytes a sample, now about 30). The index is stricter
/// than the constraint it replaces: `(sample_type_id, strict_fingerprint)` stays
/// unique, and two fingerprints of one type that share their first 16 bytes (the start
/// time and 64 bits of hash) cannot both be stored. Lookups bind the prefix and compare
/// the whole fingerprint in the row (`SampleIndexes.fingerprintMatches`); a writer whose
/// fingerprint's prefix is taken moves to the next `occurrence`, as it does for an exact
/// duplicate (docs/hashing.md section 6). Because the prefixes are unique within a
/// type, ordering a type's samples by the prefix orders them by the whole fingerprint:
/// point-in-time pages read the index in that order (the chain-state digest, across
/// types, sorts its rows anyway).
/// The table is rebuilt row for row with its ids (bundle items follow ids), with its
/// columns, checks and foreign keys as schema 9 made them, and its two other indexes as
/// schema 11 left them. An archive holding two samples of a type whose fingerprints
/// share 16 bytes (never by chance; only if crafted) fails this migration, which then
/// rolls back and leaves it at schema 13.
/// Shipped: never edit; add a new migration instead.
enum SchemaV14 {
    static let version = 14
    static let description = "samples unique on (sample_type_id, the strict fingerprint's first 16 bytes), replacing UNIQUE(sample_type_id, strict_fingerprint)"
    static let sql = """
    CREATE TABLE samples_v14 (
        id INTEGER PRIMARY KEY,
        sample_type_id INTEGER NOT NULL REFERENCES sample_types(id),
        sample_uuid_hash BLOB CHECK (sample_uuid_hash IS NULL OR (typeof(sample_uuid_hash) = 'blob' AND length(sample_uuid_hash) = 32)),
        strict_fingerprint BLOB NOT NULL CHECK (typeof(strict_fingerprint) = 'blob' AND length(strict_fingerprint) = 32),
        semantic_fingerprint BLOB CHECK (semantic_fingerprint IS NULL OR (typeof(semantic_fingerprint) = 'blob' AND length(semantic_fingerprint) = 32)),
        fuzzy_key TEXT,
        first_seen_observation_id INTEGER NOT NULL REFERENCES observations(id),
        first_seen_at REAL NOT NULL
    );
    INSERT INTO samples_v14(id, sample_type_id, sample_uuid_hash, strict_fingerprint, semantic_fingerprint, fuzzy_key, first_seen_observation_id, first_seen_at)
    SELECT id, sample_type_id, sample_uuid_hash, strict_fingerprint, semantic_fingerprint, fuzzy_key, first_seen_observation_id, first_seen_at
    FROM samples ORDER BY id;
    DROP TABLE samples;
    ALTER TABLE samples_v14 RENAME TO samples;
    CREATE UNIQUE INDEX idx_samples_type_fingerprint ON samples(sample_type_id, substr(strict_fingerprint, 1, 16));
    CREATE INDEX idx_samples_uuid_hash ON samples(sample_uuid_hash) WHERE sample_uuid_hash IS NOT NULL;
    CREATE INDEX idx_samples_type_semantic ON samples(sample_type_id, substr(semantic_fingerprint, 1, 8)) WHERE semantic_fingerprint IS NOT NULL;
    """
}
