/// Migration 2: the archive v2 base schema (database-design.md section 5),
/// plus the additions recorded in docs/decisions/2026-11-22-archive-schema-additions.md.
/// Shipped: never edit; add a new migration instead.
enum SchemaV2 {
    static let version = 2
    static let description = "archive v2 base schema"
    static let sql = """
    CREATE TABLE schema_migrations (
        version INTEGER PRIMARY KEY,
        applied_at REAL NOT NULL,
        description TEXT NOT NULL
    );

    CREATE TABLE archive_metadata (
        key TEXT PRIMARY KEY,
        value TEXT NOT NULL
    );

    CREATE TABLE device_chains (
        id INTEGER PRIMARY KEY,
        device_chain_hash TEXT NOT NULL UNIQUE,
        created_at REAL NOT NULL,
        recovered_from_keychain INTEGER NOT NULL DEFAULT 0
    );

    CREATE TABLE observations (
        id INTEGER PRIMARY KEY,
        device_chain_id INTEGER NOT NULL REFERENCES device_chains(id),
        observed_at REAL NOT NULL,
        started_at REAL,
        ended_at REAL,
        status TEXT NOT NULL,
        trigger_reason TEXT NOT NULL,
        app_version TEXT,
        os_version TEXT,
        time_zone_identifier TEXT,
        time_zone_seconds_from_gmt INTEGER,
        schema_version INTEGER NOT NULL,
        selected_type_set_hash TEXT,
        notes TEXT
    );

    CREATE INDEX idx_observations_device_time
    ON observations(device_chain_id, observed_at);

    CREATE TABLE sample_types (
        id INTEGER PRIMARY KEY,
        type_identifier TEXT NOT NULL UNIQUE,
        display_name TEXT,
        category TEXT
    );

    CREATE TABLE observation_type_runs (
        id INTEGER PRIMARY KEY,
        observation_id INTEGER NOT NULL REFERENCES observations(id),
        sample_type_id INTEGER NOT NULL REFERENCES sample_types(id),
        status TEXT NOT NULL,
        started_at REAL,
        ended_at REAL,
        anchor_before BLOB,
        anchor_after BLOB,
        inserted_event_count INTEGER NOT NULL DEFAULT 0,
        deleted_event_count INTEGER NOT NULL DEFAULT 0,
        verified_visible_count INTEGER,
        error_kind TEXT,
        error_message_hash TEXT,
        run_kind TEXT NOT NULL DEFAULT 'full_scan',
        rejected_record_count INTEGER NOT NULL DEFAULT 0,
        UNIQUE(observation_id, sample_type_id)
    );

    CREATE INDEX idx_type_runs_type_observation
    ON observation_type_runs(sample_type_id, observation_id);

    CREATE TABLE sources (
        id INTEGER PRIMARY KEY,
        source_name_hash TEXT,
        bundle_identifier TEXT
    );

    CREATE UNIQUE INDEX idx_sources_identity
    ON sources(ifnull(source_name_hash, ''), ifnull(bundle_identifier, ''));

    CREATE TABLE source_revisions (
        id INTEGER PRIMARY KEY,
        source_id INTEGER NOT NULL REFERENCES sources(id),
        product_type TEXT,
        version TEXT,
        operating_system_version TEXT,
        UNIQUE(source_id, product_type, version, operating_system_version)
    );

    CREATE UNIQUE INDEX idx_source_revisions_identity
    ON source_revisions(source_id, ifnull(product_type, ''), ifnull(version, ''), ifnull(operating_system_version, ''));

    CREATE TABLE hk_devices (
        id INTEGER PRIMARY KEY,
        device_hash TEXT,
        manufacturer_hash TEXT,
        model TEXT,
        hardware_version TEXT,
        firmware_version TEXT,
        software_version TEXT,
        local_identifier_hash TEXT,
        udi_hash TEXT
    );

    CREATE UNIQUE INDEX idx_hk_devices_hash ON hk_devices(device_hash);

    CREATE TABLE metadata_blobs (
        id INTEGER PRIMARY KEY,
        metadata_hash TEXT NOT NULL UNIQUE,
        metadata_json TEXT NOT NULL
    );

    CREATE TABLE samples (
        id INTEGER PRIMARY KEY,
        sample_type_id INTEGER NOT NULL REFERENCES sample_types(id),
        sample_uuid_hash TEXT,
        strict_fingerprint TEXT NOT NULL,
        semantic_fingerprint TEXT,
        fuzzy_key TEXT,
        first_seen_observation_id INTEGER NOT NULL REFERENCES observations(id),
        first_seen_at REAL NOT NULL,
        UNIQUE(sample_type_id, strict_fingerprint)
    );

    CREATE INDEX idx_samples_uuid_hash
    ON samples(sample_uuid_hash);

    CREATE INDEX idx_samples_type_semantic
    ON samples(sample_type_id, semantic_fingerprint);

    CREATE TABLE sample_versions (
        id INTEGER PRIMARY KEY,
        sample_id INTEGER NOT NULL REFERENCES samples(id),
        payload_hash TEXT NOT NULL,
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
        UNIQUE(sample_id, payload_hash)
    );

    CREATE INDEX idx_sample_versions_sample
    ON sample_versions(sample_id);

    CREATE INDEX idx_sample_versions_time
    ON sample_versions(start_date, end_date);

    CREATE TABLE sample_observation_events (
        id INTEGER PRIMARY KEY,
        observation_id INTEGER NOT NULL REFERENCES observations(id),
        sample_id INTEGER NOT NULL REFERENCES samples(id),
        version_id INTEGER REFERENCES sample_versions(id),
        event_kind TEXT NOT NULL,
        observed_at REAL NOT NULL,
        evidence_kind TEXT,
        UNIQUE(observation_id, sample_id, event_kind)
    );

    CREATE INDEX idx_events_observation_kind
    ON sample_observation_events(observation_id, event_kind);

    CREATE INDEX idx_events_sample
    ON sample_observation_events(sample_id, observation_id);

    CREATE TABLE sample_visibility_ranges (
        sample_id INTEGER NOT NULL REFERENCES samples(id),
        version_id INTEGER REFERENCES sample_versions(id),
        first_observation_id INTEGER NOT NULL REFERENCES observations(id),
        last_observation_id INTEGER REFERENCES observations(id),
        first_seen_at REAL NOT NULL,
        last_seen_at REAL,
        PRIMARY KEY (sample_id, version_id, first_observation_id)
    );

    CREATE INDEX idx_visibility_open_ranges
    ON sample_visibility_ranges(last_observation_id);

    CREATE INDEX idx_visibility_point_lookup
    ON sample_visibility_ranges(first_observation_id, last_observation_id);

    CREATE TABLE sample_relationships (
        id INTEGER PRIMARY KEY,
        observation_id INTEGER REFERENCES observations(id),
        source_sample_id INTEGER NOT NULL REFERENCES samples(id),
        target_sample_id INTEGER NOT NULL REFERENCES samples(id),
        relationship_kind TEXT NOT NULL,
        metadata_id INTEGER REFERENCES metadata_blobs(id),
        UNIQUE(observation_id, source_sample_id, target_sample_id, relationship_kind)
    );

    CREATE INDEX idx_relationship_source
    ON sample_relationships(source_sample_id, relationship_kind);

    CREATE INDEX idx_relationship_target
    ON sample_relationships(target_sample_id, relationship_kind);

    CREATE TABLE observation_type_summaries (
        observation_id INTEGER NOT NULL REFERENCES observations(id),
        sample_type_id INTEGER NOT NULL REFERENCES sample_types(id),
        visible_record_count INTEGER NOT NULL,
        appeared_count INTEGER NOT NULL DEFAULT 0,
        disappeared_count INTEGER NOT NULL DEFAULT 0,
        representation_changed_count INTEGER NOT NULL DEFAULT 0,
        earliest_start_date REAL,
        latest_end_date REAL,
        value_sum REAL,
        value_max REAL,
        aggregate_hash TEXT,
        PRIMARY KEY (observation_id, sample_type_id)
    );

    CREATE TABLE daily_type_aggregates (
        observation_id INTEGER NOT NULL REFERENCES observations(id),
        sample_type_id INTEGER NOT NULL REFERENCES sample_types(id),
        bucket_start REAL NOT NULL,
        bucket_end REAL NOT NULL,
        visible_record_count INTEGER NOT NULL,
        value_sum REAL,
        value_max REAL,
        source_revision_id INTEGER,
        aggregate_hash TEXT,
        PRIMARY KEY (observation_id, sample_type_id, bucket_start, source_revision_id)
    );

    CREATE INDEX idx_daily_type_bucket
    ON daily_type_aggregates(sample_type_id, bucket_start);

    CREATE TABLE export_manifests (
        id INTEGER PRIMARY KEY,
        export_id TEXT NOT NULL UNIQUE,
        created_at REAL NOT NULL,
        export_kind TEXT NOT NULL,
        from_observation_id INTEGER REFERENCES observations(id),
        to_observation_id INTEGER REFERENCES observations(id),
        filter_json TEXT,
        manifest_hash TEXT NOT NULL,
        record_count INTEGER NOT NULL
    );

    CREATE TABLE export_items (
        export_manifest_id INTEGER NOT NULL REFERENCES export_manifests(id),
        sample_id INTEGER NOT NULL REFERENCES samples(id),
        version_id INTEGER REFERENCES sample_versions(id),
        item_hash TEXT NOT NULL,
        PRIMARY KEY (export_manifest_id, sample_id, version_id)
    );

    CREATE TABLE capture_pages (
        type_run_id INTEGER NOT NULL REFERENCES observation_type_runs(id),
        page_index INTEGER NOT NULL,
        page_hash TEXT NOT NULL,
        record_count INTEGER NOT NULL,
        committed_at REAL NOT NULL,
        PRIMARY KEY (type_run_id, page_index)
    );
    """
}
