/// Migration 5: differential daily aggregates. An observation in which a type
/// did not change stores no daily rows for it; its summary row names the
/// observation whose daily rows it shares (docs/decisions/2026-11-22-aggregates.md).
/// Shipped: never edit; add a new migration instead.
enum SchemaV5 {
    static let version = 5
    static let description = "observation_type_summaries.daily_base_observation_id"
    static let sql = """
    ALTER TABLE observation_type_summaries ADD COLUMN daily_base_observation_id INTEGER REFERENCES observations(id);
    ALTER TABLE observation_type_summaries ADD COLUMN computed_at REAL;
    """
}
