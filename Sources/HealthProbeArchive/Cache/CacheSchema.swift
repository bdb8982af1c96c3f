/// The cache's own schema (cache-design.md). Rebuildable tables are dropped
/// and recreated when the cache schema version changes; `app_settings` is
/// local state and survives every rebuild.
enum CacheSchema {
    /// 2: labels of diff summaries follow the source rule of consolidation (2026-11-28).
    static let version = 2

    static let settingsSQL = """
    CREATE TABLE IF NOT EXISTS app_settings (
        key TEXT PRIMARY KEY,
        value TEXT NOT NULL,
        updated_at REAL NOT NULL
    );
    """

    static let rebuildableTables = [
        "cache_meta", "cached_observation_rows", "cached_type_summaries", "cached_daily_aggregates",
        "cached_diff_summaries", "cached_export_manifests", "cached_archive_health",
    ]

    static let sql = """
    CREATE TABLE cache_meta (
        key TEXT PRIMARY KEY,
        value TEXT NOT NULL
    );
    CREATE TABLE cached_observation_rows (
        observation_id INTEGER PRIMARY KEY,
        observed_at REAL NOT NULL,
        status TEXT NOT NULL,
        trigger_reason TEXT NOT NULL,
        time_zone_identifier TEXT,
        tracked_type_count INTEGER NOT NULL,
        visible_record_count INTEGER NOT NULL,
        appeared_count INTEGER NOT NULL,
        disappeared_count INTEGER NOT NULL,
        representation_changed_count INTEGER NOT NULL,
        deleted_object_count INTEGER NOT NULL,
        archive_schema_version INTEGER NOT NULL,
        cache_schema_version INTEGER NOT NULL,
        source_aggregate_hash TEXT NOT NULL,
        computed_at REAL NOT NULL
    );
    CREATE TABLE cached_type_summaries (
        observation_id INTEGER NOT NULL,
        sample_type_identifier TEXT NOT NULL,
        display_name TEXT,
        visible_record_count INTEGER NOT NULL,
        appeared_count INTEGER NOT NULL,
        disappeared_count INTEGER NOT NULL,
        representation_changed_count INTEGER NOT NULL,
        earliest_start_date REAL,
        latest_end_date REAL,
        value_sum REAL,
        value_max REAL,
        aggregate_hash TEXT,
        archive_schema_version INTEGER NOT NULL,
        cache_schema_version INTEGER NOT NULL,
        computed_at REAL NOT NULL,
        PRIMARY KEY (observation_id, sample_type_identifier)
    );
    CREATE TABLE cached_daily_aggregates (
        observation_id INTEGER NOT NULL,
        sample_type_identifier TEXT NOT NULL,
        bucket_start REAL NOT NULL,
        bucket_end REAL NOT NULL,
        time_zone_identifier TEXT,
        visible_record_count INTEGER NOT NULL,
        value_sum REAL,
        value_max REAL,
        source_revision_display_hash TEXT NOT NULL,
        aggregate_hash TEXT,
        archive_schema_version INTEGER NOT NULL,
        cache_schema_version INTEGER NOT NULL,
        computed_at REAL NOT NULL,
        PRIMARY KEY (observation_id, sample_type_identifier, bucket_start, source_revision_display_hash)
    );
    CREATE TABLE cached_diff_summaries (
        from_observation_id INTEGER NOT NULL,
        to_observation_id INTEGER NOT NULL,
        sample_type_identifier TEXT NOT NULL,
        appeared_count INTEGER NOT NULL,
        disappeared_count INTEGER NOT NULL,
        representation_changed_count INTEGER NOT NULL,
        labels TEXT NOT NULL,
        consolidation_likely INTEGER NOT NULL,
        uncertainty_reason TEXT,
        source_aggregate_hash TEXT,
        archive_schema_version INTEGER NOT NULL,
        cache_schema_version INTEGER NOT NULL,
        computed_at REAL NOT NULL,
        PRIMARY KEY (from_observation_id, to_observation_id, sample_type_identifier)
    );
    CREATE TABLE cached_export_manifests (
        export_id TEXT PRIMARY KEY,
        export_kind TEXT NOT NULL,
        created_at REAL NOT NULL,
        from_observation_id INTEGER,
        to_observation_id INTEGER,
        filter_summary TEXT,
        record_count INTEGER,
        manifest_hash TEXT,
        file_path TEXT,
        status TEXT NOT NULL,
        archive_schema_version INTEGER NOT NULL,
        cache_schema_version INTEGER NOT NULL,
        computed_at REAL NOT NULL
    );
    CREATE TABLE cached_archive_health (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        archive_schema_version INTEGER NOT NULL,
        cache_schema_version INTEGER NOT NULL,
        last_integrity_check_at REAL,
        last_integrity_status TEXT,
        last_error_kind TEXT,
        last_error_message_hash TEXT,
        cache_build_id TEXT NOT NULL,
        status_json TEXT NOT NULL,
        computed_at REAL NOT NULL
    );
    """
}
