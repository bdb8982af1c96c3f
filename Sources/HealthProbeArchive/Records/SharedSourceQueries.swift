import Foundation
import GRDB

/// The queries behind the household's possibly shared sources (strict fingerprints
/// visible in more than one chain's replica).
public enum SharedSourceQueries {
    /// The replica's type ids by identifier (all types when `type` is nil).
    public static func typeIDs(_ db: Database, type: String?) throws -> [String: Int64] {
        var ids: [String: Int64] = [:]
        for row in try Row.fetchAll(db, sql: "SELECT type_identifier, id FROM sample_types WHERE ? IS NULL OR type_identifier = ?", arguments: [type, type]) {
            ids[row[0]] = row[1]
        }
        return ids
    }

    /// Appends up to `limit` visible strict fingerprints of type `typeID`, in index (prefix)
    /// order after the 16-byte prefix `after`, to `into`, each as its 32 bytes (no row or
    /// array made per fingerprint); returns how many. A fingerprint of another length (a
    /// damaged replica) is an error naming the check that finds it.
    public static func visibleFingerprints(_ db: Database, typeID: Int64, after: [UInt8]?, limit: Int, into: inout [UInt8]) throws -> Int {
        let prefix = SampleIndexes.fingerprintPrefix("s.strict_fingerprint")
        let rows = try Row.fetchCursor(db.cachedStatement(sql: """
            SELECT s.strict_fingerprint FROM samples s
            WHERE s.sample_type_id = ? AND (? IS NULL OR \(prefix) > ?)
              AND EXISTS (SELECT 1 FROM sample_visibility_ranges r WHERE r.sample_id = s.id AND r.last_observation_id IS NULL)
            ORDER BY \(prefix) LIMIT ?
            """), arguments: [typeID, after.map { Data($0) }, after.map { Data($0) }, limit])
        var n = 0
        while let row = try rows.next() {
            let ok = try row.withUnsafeData(atIndex: 0) { data -> Bool in
                guard let data, data.count == 32 else { return false }
                into.append(contentsOf: data)
                return true
            }
            guard ok else {
                throw ArchiveError(.invalidState, "a visible sample's strict fingerprint is not 32 bytes; run `hp-server verify --full`")
            }
            n += 1
        }
        return n
    }

    /// Per type, visible records of this replica whose strict fingerprint is also
    /// visible in the replica at `otherPath` (attached for the query).
    public static func identical(_ db: Database, otherPath: String, type: String?) throws -> [(typeIdentifier: String, count: Int)] {
        try db.execute(sql: "ATTACH DATABASE ? AS other", arguments: [otherPath])
        defer { try? db.execute(sql: "DETACH DATABASE other") }
        return try Row.fetchAll(db, sql: """
            SELECT st.type_identifier, count(*) AS n
            FROM main.samples s
            JOIN main.sample_types st ON st.id = s.sample_type_id
            JOIN main.sample_visibility_ranges r ON r.sample_id = s.id AND r.last_observation_id IS NULL
            JOIN other.sample_types ot ON ot.type_identifier = st.type_identifier
            JOIN other.samples os ON os.sample_type_id = ot.id AND \(SampleIndexes.fingerprintMatches("os.strict_fingerprint", "s.strict_fingerprint"))
            JOIN other.sample_visibility_ranges orr ON orr.sample_id = os.id AND orr.last_observation_id IS NULL
            WHERE ? IS NULL OR st.type_identifier = ?
            GROUP BY st.type_identifier ORDER BY st.type_identifier
            """, arguments: [type, type]).map { ($0[0], $0[1]) }
    }
}
