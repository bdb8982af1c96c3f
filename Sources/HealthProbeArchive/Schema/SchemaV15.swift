/// Migration 15 (docs/decisions/2026-11-27-event-kind-codes.md): an event's
/// `event_kind` and `evidence_kind` are stored as small integer codes (`EventKind.code`,
/// `EvidenceKind.code`: appeared 0, disappeared 1, representation_changed 2,
/// deleted_object 3; reported 0, full_scan_absent 1, hk_deleted_object 2) instead of
/// their names, in the table and again in the events' UNIQUE index: SQLite stores 0 and
/// 1 in the record header alone. The kinds stay closed (a CHECK refuses any other
/// value, text included) and are named at every edge: bundles, exports, the CLI, JSON.
/// The table is rebuilt row for row with its ids (bundle items follow ids); a stored
/// name no kind has maps to itself, which the CHECK refuses, so the migration then
/// fails and leaves schema 14 as it was.
/// Shipped: never edit; add a new migration instead.
enum SchemaV15 {
    static let version = 15
    static let description = "sample_observation_events.event_kind and evidence_kind stored as integer codes"
    static let sql = """
    CREATE TABLE sample_observation_events_v15 (
        id INTEGER PRIMARY KEY,
        observation_id INTEGER NOT NULL REFERENCES observations(id),
        sample_id INTEGER NOT NULL REFERENCES samples(id),
        version_id INTEGER REFERENCES sample_versions(id),
        event_kind INTEGER NOT NULL CHECK (typeof(event_kind) = 'integer' AND event_kind BETWEEN 0 AND 3),
        observed_at REAL NOT NULL,
        evidence_kind INTEGER CHECK (evidence_kind IS NULL OR (typeof(evidence_kind) = 'integer' AND evidence_kind BETWEEN 0 AND 2)),
        UNIQUE(observation_id, event_kind, sample_id)
    );
    INSERT INTO sample_observation_events_v15(id, observation_id, sample_id, version_id, event_kind, observed_at, evidence_kind)
    SELECT id, observation_id, sample_id, version_id,
           CASE event_kind WHEN 'appeared' THEN 0 WHEN 'disappeared' THEN 1 WHEN 'representation_changed' THEN 2 WHEN 'deleted_object' THEN 3 ELSE event_kind END,
           observed_at,
           CASE evidence_kind WHEN 'reported' THEN 0 WHEN 'full_scan_absent' THEN 1 WHEN 'hk_deleted_object' THEN 2 ELSE evidence_kind END
    FROM sample_observation_events ORDER BY id;
    DROP TABLE sample_observation_events;
    ALTER TABLE sample_observation_events_v15 RENAME TO sample_observation_events;
    CREATE INDEX idx_events_sample ON sample_observation_events(sample_id, observation_id);
    """
}
