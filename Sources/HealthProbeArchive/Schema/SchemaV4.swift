/// Migration 4: `bundle_log`, the bundles a replica received (and, later, the
/// bundles a node built and had acknowledged), with their manifest hashes.
/// Shipped: never edit; add a new migration instead.
enum SchemaV4 {
    static let version = 4
    static let description = "bundle_log"
    static let sql = """
    CREATE TABLE bundle_log (
        device_chain_id INTEGER NOT NULL REFERENCES device_chains(id),
        sequence INTEGER NOT NULL,
        observation_id INTEGER NOT NULL REFERENCES observations(id),
        manifest_hash TEXT NOT NULL,
        previous_manifest_hash TEXT,
        item_count INTEGER NOT NULL,
        direction TEXT NOT NULL,
        recorded_at REAL NOT NULL,
        acknowledged_at REAL,
        PRIMARY KEY (device_chain_id, direction, sequence)
    );
    """
}
