import GRDB

/// How late the samples an observation saw first arrived: per type, the largest
/// first-seen time minus the sample's end, in seconds (0 when none was late). A sample
/// written hours after its own time (Apple Watch's resting heart rate) is late, not lost.
public enum ObservationLateness {
    /// Per type identifier, for observation `observationID` (works on replicas too).
    public static func byType(_ db: Database, observationID: Int64) throws -> [String: Double] {
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

extension NodeArchive {
    /// `ObservationLateness.byType` of this node's archive.
    public func lateness(observationID: Int64) throws -> [String: Double] {
        try archive.writer.read { db in try ObservationLateness.byType(db, observationID: observationID) }
    }
}
