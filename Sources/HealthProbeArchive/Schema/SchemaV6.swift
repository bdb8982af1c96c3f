/// Migration 6: export status. An export's manifest row is written when it
/// starts (`running`) and becomes `completed` only once its file is complete
/// and renamed into place; a cancelled or failed export stays `cancelled` or
/// `failed` with no manifest hash recorded as complete.
/// Shipped: never edit; add a new migration instead.
enum SchemaV6 {
    static let version = 6
    static let description = "export_manifests.status, file_path, as_of_observation_id"
    static let sql = """
    ALTER TABLE export_manifests ADD COLUMN status TEXT NOT NULL DEFAULT 'completed';
    ALTER TABLE export_manifests ADD COLUMN file_path TEXT;
    ALTER TABLE export_manifests ADD COLUMN as_of_observation_id INTEGER REFERENCES observations(id);
    ALTER TABLE export_manifests ADD COLUMN ended_at REAL;
    """
}
