/// Migration 10 (docs/decisions/2026-11-24-compact-schema-v8.md, "Schema 10"):
/// the events' UNIQUE constraint keeps its three columns in the order
/// `(observation_id, event_kind, sample_id)`, so the one index serves both the
/// constraint and every lookup of an observation's events by kind, and
/// `idx_events_observation_kind` (`observation_id, event_kind` plus the rowid,
/// about 21 bytes a sample) is dropped. Lookups that bind an observation and a
/// sample name the kinds they read, so they stay point lookups.
/// The table is rebuilt row for row with its ids (bundle items follow ids).
/// Two indexes no query's plan used are dropped too: `idx_relationship_source`
/// (the importer's relationship check uses the target index) and
/// `idx_daily_type_bucket` (every daily read binds an observation and a type,
/// the primary key's prefix). `IndexPlanTests` names the query each index left
/// serves and asserts its plan.
/// Shipped: never edit; add a new migration instead.
enum SchemaV10 {
    static let version = 10
    static let description = "events UNIQUE(observation_id, event_kind, sample_id); idx_events_observation_kind, idx_relationship_source and idx_daily_type_bucket dropped"
    static let sql = """
    CREATE TABLE sample_observation_events_v10 (
        id INTEGER PRIMARY KEY,
        observation_id INTEGER NOT NULL REFERENCES observations(id),
        sample_id INTEGER NOT NULL REFERENCES samples(id),
        version_id INTEGER REFERENCES sample_versions(id),
        event_kind TEXT NOT NULL,
        observed_at REAL NOT NULL,
        evidence_kind TEXT,
        UNIQUE(observation_id, event_kind, sample_id)
    );
    INSERT INTO sample_observation_events_v10(id, observation_id, sample_id, version_id, event_kind, observed_at, evidence_kind)
    SELECT id, observation_id, sample_id, version_id, event_kind, observed_at, evidence_kind
    FROM sample_observation_events ORDER BY id;
    DROP TABLE sample_observation_events;
    ALTER TABLE sample_observation_events_v10 RENAME TO sample_observation_events;
    CREATE INDEX idx_events_sample ON sample_observation_events(sample_id, observation_id);
    DROP INDEX idx_relationship_source;
    DROP INDEX idx_daily_type_bucket;
    """
}
