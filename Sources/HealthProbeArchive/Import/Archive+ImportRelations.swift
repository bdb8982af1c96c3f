import Foundation
import GRDB

/// A parent-child relationship an import saw (a correlation and its member), kept in a
/// temporary table on the writer connection until the observation's samples are written.
public struct ImportRelation: Sendable {
    public var parentType: String
    /// The parent's strict fingerprint (occurrence 0), hex.
    public var parentFingerprint: String
    public var childType: String
    /// The child's strict fingerprint (occurrence 0), hex.
    public var childFingerprint: String
    public var kind: String
    /// Whether the child was also a top-level record of the file.
    public var alsoEmitted: Bool
    /// The child sample as JSON, when it was not also emitted.
    public var childJSON: String?

    public init(parentType: String, parentFingerprint: String, childType: String, childFingerprint: String, kind: String, alsoEmitted: Bool, childJSON: String?) {
        self.parentType = parentType
        self.parentFingerprint = parentFingerprint
        self.childType = childType
        self.childFingerprint = childFingerprint
        self.kind = kind
        self.alsoEmitted = alsoEmitted
        self.childJSON = childJSON
    }
}

/// The importer's queries: earlier imports' types, edit pairs, and relationships.
extension Archive {
    /// Types that earlier import observations of `chain` (other than `obs`) had runs for.
    public func typesOfEarlierImports(chain: Int64, excluding obs: Int64) throws -> [String] {
        try writer.read { db in
            try String.fetchAll(db, sql: """
                SELECT DISTINCT st.type_identifier FROM observation_type_runs t
                JOIN observations o ON o.id = t.observation_id JOIN sample_types st ON st.id = t.sample_type_id
                WHERE o.trigger_reason = 'import' AND o.device_chain_id = ? AND o.id != ? AND t.status IN ('completed', 'needs_review')
                ORDER BY 1
                """, arguments: [chain, obs])
        }
    }

    /// Pairs of one disappeared and one appeared sample of the same type and semantic
    /// fingerprint in observation `obs` (records without UUIDs whose value was edited).
    public func semanticEditPairs(observation obs: Int64) throws -> Int {
        try writer.read { db in
            // Driven from what disappeared (usually few): the appeared side is counted per
            // disappeared key through the semantic index, not grouped over every appearance
            // (a first import's million appearances took seconds to group for nothing).
            // The index holds each fingerprint's first 8 bytes (schema 11): the prefix finds
            // the candidates, the whole fingerprint in the row decides. INDEXED BY and CROSS
            // JOIN: SQLite otherwise drives this subquery from every appeared event of the
            // observation, once per disappeared key (160 s for a 1% re-import of 1M).
            try Int.fetchOne(db, sql: """
                WITH d AS (SELECT s.sample_type_id AS t, s.semantic_fingerprint AS k, count(*) AS n
                           FROM sample_observation_events e JOIN samples s ON s.id = e.sample_id
                           WHERE e.observation_id = ?1 AND e.event_kind = \(EventKind.disappeared.sql) AND s.semantic_fingerprint IS NOT NULL GROUP BY 1, 2)
                SELECT ifnull(sum(min(d.n, (SELECT count(*) FROM samples s INDEXED BY idx_samples_type_semantic
                                              CROSS JOIN sample_observation_events e
                                                ON e.observation_id = ?1 AND e.sample_id = s.id AND e.event_kind = \(EventKind.appeared.sql)
                                            WHERE s.sample_type_id = d.t AND substr(s.semantic_fingerprint, 1, 8) = substr(d.k, 1, 8)
                                              AND s.semantic_fingerprint = d.k))), 0)
                FROM d
                """, arguments: [obs]) ?? 0
        }
    }

    /// Creates (or empties) the import's relationship table on the writer connection.
    public func prepareImportRelations() throws {
        try writer.write { db in
            try db.execute(sql: """
                CREATE TEMP TABLE IF NOT EXISTS hp_import_relations(
                    parent_type TEXT NOT NULL, parent_fp BLOB NOT NULL, child_type TEXT NOT NULL, child_fp BLOB NOT NULL,
                    kind TEXT NOT NULL, also_emitted INTEGER NOT NULL, child_json TEXT);
                DELETE FROM temp.hp_import_relations;
                """)
        }
    }

    /// Adds relationships to the import's table.
    public func saveImportRelations(_ relations: [ImportRelation]) throws {
        guard !relations.isEmpty else { return }
        // Fingerprints as the archive stores them (32-byte blobs), so the joins compare like with like.
        let rows: [[DatabaseValueConvertible?]] = relations.map {
            [$0.parentType, StoredHash.databaseValue($0.parentFingerprint), $0.childType, StoredHash.databaseValue($0.childFingerprint),
             $0.kind, $0.alsoEmitted ? 1 : 0, $0.childJSON]
        }
        try writer.write { db in
            for r in rows {
                try db.execute(sql: "INSERT INTO temp.hp_import_relations VALUES (?, ?, ?, ?, ?, ?, ?)", arguments: StatementArguments(r))
            }
        }
    }

    /// Members (type, JSON) that were not also top-level records and that no run of
    /// observation `obs` saw (`seenTable`: the capture session's seen table).
    public func missingImportMembers(observation obs: Int64, seenTable: String) throws -> [(type: String, json: String)] {
        // Temporary tables live on the writer connection.
        try writer.write { db in
            try Row.fetchAll(db, sql: """
                SELECT DISTINCT r.child_type, r.child_json FROM temp.hp_import_relations r
                WHERE r.also_emitted = 0 AND NOT EXISTS (
                    SELECT 1 FROM samples s JOIN sample_types st ON st.id = s.sample_type_id
                    JOIN observation_type_runs t ON t.observation_id = ? AND t.sample_type_id = s.sample_type_id
                    JOIN \(seenTable) x ON x.sample_id = s.id AND x.type_run_id = t.id
                    WHERE st.type_identifier = r.child_type AND \(SampleIndexes.fingerprintMatches("s.strict_fingerprint", "r.child_fp")))
                """, arguments: [obs]).map { row -> (type: String, json: String) in (row[0], row[1]) }
        }
    }

    /// Records each relationship of the import's table once, in the first observation
    /// that saw it (`obs`), and empties the table; returns how many were new.
    public func writeImportRelationships(observation obs: Int64) throws -> Int {
        try writer.write { db in
            try db.execute(sql: """
                INSERT OR IGNORE INTO sample_relationships(observation_id, source_sample_id, target_sample_id, relationship_kind)
                SELECT DISTINCT ?, p.id, c.id, r.kind
                FROM temp.hp_import_relations r
                JOIN sample_types pt ON pt.type_identifier = r.parent_type
                JOIN samples p ON p.sample_type_id = pt.id AND \(SampleIndexes.fingerprintMatches("p.strict_fingerprint", "r.parent_fp"))
                JOIN sample_types ct ON ct.type_identifier = r.child_type
                JOIN samples c ON c.sample_type_id = ct.id AND \(SampleIndexes.fingerprintMatches("c.strict_fingerprint", "r.child_fp"))
                WHERE NOT EXISTS (SELECT 1 FROM sample_relationships x
                                  WHERE x.source_sample_id = p.id AND x.target_sample_id = c.id AND x.relationship_kind = r.kind)
                """, arguments: [obs])
            let n = db.changesCount
            try db.execute(sql: "DELETE FROM temp.hp_import_relations")
            return n
        }
    }
}
