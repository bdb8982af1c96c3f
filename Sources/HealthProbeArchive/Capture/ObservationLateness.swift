import GRDB

extension NodeArchive {
    /// Per type, how late the samples first seen in `observationID` arrived: the
    /// largest first-seen time minus the sample's end, in seconds (0 when none was late).
    public func lateness(observationID: Int64) throws -> [String: Double] {
        try archive.writer.read { db in
            let rows = try Row.fetchAll(db, sql: """
                SELECT t.type_identifier AS type, max(max(r.first_seen_at - v.end_date, 0)) AS late
                FROM samples s
                JOIN sample_types t ON t.id = s.sample_type_id
                JOIN sample_visibility_ranges r ON r.sample_id = s.id AND r.first_observation_id = s.first_seen_observation_id
                JOIN sample_versions v ON v.id = r.version_id
                WHERE s.first_seen_observation_id = ?
                GROUP BY t.type_identifier
                """, arguments: [observationID])
            var out: [String: Double] = [:]
            for row in rows {
                let type: String = row["type"]
                let late: Double? = row["late"]
                out[type] = late ?? 0
            }
            return out
        }
    }
}
