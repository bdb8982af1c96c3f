/// Migration 16 (docs/archive.md, "Reading an archive without HealthProbe"): read-only
/// views that show the archive in the design's shape to tools that have only SQLite:
/// hashes as lower-case hex, event and evidence kinds by name, dates as ISO 8601 UTC
/// text with milliseconds beside the stored REAL seconds, what was visible at each
/// observation (`visible_at`) and what changed between two (`diff_between`).
///
/// Views hold no rows and cost nothing until read. A later migration that rebuilds a
/// table these views read (create, copy, drop, rename) must drop the views first and
/// create them again after: SQLite refuses to rename a table while a view names a
/// table that no longer exists.
/// Shipped: never edit; add a new migration instead.
enum SchemaV16 {
    static let version = 16
    static let description = "read-only views for outside tools: readable_*, visible_at, diff_between"

    /// ISO 8601 UTC text with milliseconds of a REAL column of Unix seconds (dates are
    /// stored as whole milliseconds, so the text is exact).
    static func iso(_ column: String) -> String {
        "strftime('%Y-%m-%dT%H:%M:%fZ', \(column), 'unixepoch')"
    }

    /// Lower-case hex of a hash BLOB; NULL stays NULL (SQLite's `hex(NULL)` is '').
    static func hex(_ column: String) -> String {
        "CASE WHEN \(column) IS NULL THEN NULL ELSE lower(hex(\(column))) END"
    }

    static let eventKindName = """
        CASE e.event_kind WHEN 0 THEN 'appeared' WHEN 1 THEN 'disappeared' WHEN 2 THEN 'representation_changed' WHEN 3 THEN 'deleted_object' END
        """
    static let evidenceKindName = """
        CASE e.evidence_kind WHEN 0 THEN 'reported' WHEN 1 THEN 'full_scan_absent' WHEN 2 THEN 'hk_deleted_object' END
        """

    static let sql = """
    CREATE VIEW readable_observations AS
    SELECT o.id AS observation_id, c.device_chain_hash, o.observed_at, \(iso("o.observed_at")) AS observed_at_utc,
           o.status, o.trigger_reason, o.time_zone_identifier, o.time_zone_seconds_from_gmt,
           o.started_at, \(iso("o.started_at")) AS started_at_utc, o.ended_at, \(iso("o.ended_at")) AS ended_at_utc,
           o.app_version, o.os_version, o.schema_version, o.notes
    FROM observations o JOIN device_chains c ON c.id = o.device_chain_id;

    CREATE VIEW readable_type_runs AS
    SELECT t.observation_id, st.type_identifier, t.run_kind, t.status, t.inserted_event_count, t.deleted_event_count,
           t.verified_visible_count, t.rejected_record_count, t.error_kind
    FROM observation_type_runs t JOIN sample_types st ON st.id = t.sample_type_id;

    CREATE VIEW readable_samples AS
    SELECT s.id AS sample_id, st.type_identifier,
           \(hex("s.sample_uuid_hash")) AS sample_uuid_hash, \(hex("s.strict_fingerprint")) AS strict_fingerprint,
           \(hex("s.semantic_fingerprint")) AS semantic_fingerprint,
           s.first_seen_observation_id, s.first_seen_at, \(iso("s.first_seen_at")) AS first_seen_at_utc
    FROM samples s JOIN sample_types st ON st.id = s.sample_type_id;

    CREATE VIEW readable_versions AS
    SELECT v.id AS version_id, v.sample_id, st.type_identifier, \(hex("v.payload_hash")) AS payload_hash,
           v.start_date, \(iso("v.start_date")) AS start_date_utc, v.end_date, \(iso("v.end_date")) AS end_date_utc,
           v.value_kind, v.numeric_value, v.unit, v.category_value, v.workout_activity_type, v.duration_seconds,
           src.bundle_identifier AS source_bundle_identifier, src.source_name_hash,
           sr.product_type AS source_product_type, sr.version AS source_version, sr.operating_system_version AS source_os_version,
           d.model AS device_model, m.metadata_json,
           v.creation_date, \(iso("v.creation_date")) AS creation_date_utc, v.created_observation_id
    FROM sample_versions v
    JOIN samples s ON s.id = v.sample_id
    JOIN sample_types st ON st.id = s.sample_type_id
    LEFT JOIN source_revisions sr ON sr.id = v.source_revision_id
    LEFT JOIN sources src ON src.id = sr.source_id
    LEFT JOIN hk_devices d ON d.id = v.hk_device_id
    LEFT JOIN metadata_blobs m ON m.id = v.metadata_id;

    CREATE VIEW readable_events AS
    SELECT e.id AS event_id, e.observation_id, e.sample_id, e.version_id, st.type_identifier,
           \(eventKindName) AS event_kind, \(evidenceKindName) AS evidence_kind,
           e.observed_at, \(iso("e.observed_at")) AS observed_at_utc
    FROM sample_observation_events e
    JOIN samples s ON s.id = e.sample_id
    JOIN sample_types st ON st.id = s.sample_type_id;

    CREATE VIEW readable_ranges AS
    SELECT r.sample_id, r.version_id, r.first_observation_id, r.last_observation_id,
           r.first_seen_at, \(iso("r.first_seen_at")) AS first_seen_at_utc,
           r.last_seen_at, \(iso("r.last_seen_at")) AS last_seen_at_utc
    FROM sample_visibility_ranges r;

    CREATE VIEW readable_bundle_log AS
    SELECT b.sequence, b.direction, b.observation_id, b.manifest_hash, b.previous_manifest_hash, b.item_count,
           b.recorded_at, \(iso("b.recorded_at")) AS recorded_at_utc, b.acknowledged_at, \(iso("b.acknowledged_at")) AS acknowledged_at_utc,
           c.device_chain_hash
    FROM bundle_log b JOIN device_chains c ON c.id = b.device_chain_id;

    CREATE VIEW visible_at AS
    SELECT o.id AS observation_id, r.sample_id, r.version_id, st.type_identifier,
           \(hex("s.strict_fingerprint")) AS strict_fingerprint, \(hex("v.payload_hash")) AS payload_hash,
           v.start_date, \(iso("v.start_date")) AS start_date_utc, v.end_date, \(iso("v.end_date")) AS end_date_utc,
           v.value_kind, v.numeric_value, v.unit, v.category_value, r.first_observation_id AS visible_since
    FROM observations o
    JOIN sample_visibility_ranges r ON r.first_observation_id <= o.id AND (r.last_observation_id IS NULL OR r.last_observation_id > o.id)
    JOIN samples s ON s.id = r.sample_id
    JOIN sample_types st ON st.id = s.sample_type_id
    JOIN sample_versions v ON v.id = r.version_id;

    CREATE VIEW diff_ranges AS
    SELECT a.id AS from_observation_id, b.id AS to_observation_id, r.sample_id,
           r.version_id AS before_version_id, later.version_id AS after_version_id
    FROM observations a JOIN observations b ON b.device_chain_id = a.device_chain_id AND b.id > a.id
    JOIN sample_visibility_ranges r ON r.last_observation_id > a.id AND r.last_observation_id <= b.id AND r.first_observation_id <= a.id
    LEFT JOIN sample_visibility_ranges later ON later.sample_id = r.sample_id AND later.first_observation_id <= b.id
         AND (later.last_observation_id IS NULL OR later.last_observation_id > b.id)
    WHERE later.version_id IS NOT r.version_id
    UNION ALL
    SELECT a.id, b.id, r.sample_id, NULL, r.version_id
    FROM observations a JOIN observations b ON b.device_chain_id = a.device_chain_id AND b.id > a.id
    JOIN sample_visibility_ranges r ON r.first_observation_id > a.id AND r.first_observation_id <= b.id
         AND (r.last_observation_id IS NULL OR r.last_observation_id > b.id)
    WHERE NOT EXISTS (SELECT 1 FROM sample_visibility_ranges earlier WHERE earlier.sample_id = r.sample_id
                      AND earlier.first_observation_id <= a.id AND (earlier.last_observation_id IS NULL OR earlier.last_observation_id > a.id));

    CREATE VIEW diff_between AS
    SELECT d.from_observation_id, d.to_observation_id, d.sample_id, st.type_identifier,
           CASE WHEN d.after_version_id IS NULL THEN 'disappeared' WHEN d.before_version_id IS NULL THEN 'appeared' ELSE 'changed' END AS change,
           d.before_version_id, \(hex("bv.payload_hash")) AS before_payload_hash, bv.numeric_value AS before_value,
           d.after_version_id, \(hex("av.payload_hash")) AS after_payload_hash, av.numeric_value AS after_value,
           coalesce(av.unit, bv.unit) AS unit,
           coalesce(av.start_date, bv.start_date) AS start_date, \(iso("coalesce(av.start_date, bv.start_date)")) AS start_date_utc
    FROM diff_ranges d
    JOIN samples s ON s.id = d.sample_id
    JOIN sample_types st ON st.id = s.sample_type_id
    LEFT JOIN sample_versions bv ON bv.id = d.before_version_id
    LEFT JOIN sample_versions av ON av.id = d.after_version_id;
    """
}
