import GRDB

/// The integrity checks of `ArchiveVerifier` restricted to what one observation
/// touched, cheap enough to run inside the transaction that applies its bundle:
/// the visibility ranges of every sample it touched rebuilt from that sample's
/// events, open-range sanity, each type run's verified visible count against the
/// replica's own summary, duplicate identities among the samples it added, and
/// each summary it computed against a recount of the visible ranges.
/// Problems name rows and types, never values.
public enum ObservationChecks {
    /// What is wrong after observation `obs` was written (empty: nothing).
    /// `samplesAfter`: the largest sample rowid before the observation's samples were inserted.
    /// `recountLimit`: the largest type (visible records at its previous summary) whose
    /// summary is recounted in full (about 0.1 s on this machine; tests pass 0 or more).
    public static func problems(_ db: Database, observationID obs: Int64, samplesAfter: Int64, recountLimit: Int = 100_000) throws -> [String] {
        var problems: [String] = []
        // Every statement is driven by what the observation touched (CROSS JOIN fixes
        // the loop order; INDEXED BY the lookups): an incremental bundle's checks must
        // not scan a replica of a million samples.
        // The samples the observation touched: an event, a range opened or closed. When the
        // replica held no sample before it (a chain's first bundle), every sample, event and
        // range it holds is the observation's: the tables are walked whole instead, as `ArchiveVerifier`
        // walks them (at a million samples, the temporary table's three inserts took about 0.6 s).
        let whole = samplesAfter <= 0
        if !whole {
            try db.ensureTempTable(TempTable.touchedSamples)
            try db.cachedStatement(sql: "DELETE FROM temp.hp_touched_samples").execute()
            // Three inserts, not one of a UNION: the table's key removes the repeats without
            // a temporary b-tree of the union besides it.
            for sql in ["SELECT sample_id FROM sample_observation_events WHERE observation_id = ?",
                        "SELECT sample_id FROM sample_visibility_ranges WHERE first_observation_id = ?",
                        "SELECT sample_id FROM sample_visibility_ranges WHERE last_observation_id = ?"] {
                try db.cachedStatement(sql: "INSERT OR IGNORE INTO temp.hp_touched_samples " + sql).execute(arguments: [obs])
            }
        }

        // 1. Their ranges equal the rebuild from their events (ArchiveVerifier check 6),
        // 2. and each has at most one open range: both sides walked in sample order, each
        //    sample rebuilt in memory (`RangeRebuild`), nothing sorted by SQLite.
        let rebuild = try RangeRebuild.compare(db, events: FastStatement(db, whole ? RangeRebuild.allEvents : Self.touchedEvents),
                                               stored: FastStatement(db, whole ? RangeRebuild.allRanges : Self.touchedRanges), arguments: [])
        problems += rebuild.ranges + rebuild.openRanges
        // No range closes where it opened.
        for r in try Row.fetchAll(db.cachedStatement(sql: """
            SELECT sample_id FROM sample_visibility_ranges WHERE last_observation_id = ?1 AND first_observation_id >= ?1 LIMIT 5
            """), arguments: [obs]) { problems.append("sample \(r[0] as Int64): a range closes at the observation that opened it") }

        // 3. Each type run's verified visible count equals the summary (ArchiveVerifier check 7).
        for r in try Row.fetchAll(db.cachedStatement(sql: """
            SELECT st.type_identifier, t.verified_visible_count, ts.visible_record_count
            FROM observation_type_runs t JOIN sample_types st ON st.id = t.sample_type_id
            LEFT JOIN observation_type_summaries ts ON ts.observation_id = t.observation_id AND ts.sample_type_id = t.sample_type_id
            WHERE t.observation_id = ? AND t.verified_visible_count IS NOT NULL AND ts.visible_record_count IS NOT t.verified_visible_count
            LIMIT 5
            """), arguments: [obs]) {
            problems.append("\(r[0] as String): the type run verified \(r[1] as Int) visible records, the ranges hold \((r[2] as Int?).map(String.init) ?? "none")")
        }

        // 4. A UUID names one sample of its type (ArchiveVerifier check 5), for the samples added:
        //    each added sample's UUID looked up, or, when the added samples are a quarter of
        //    the replica or more (a first bundle), the UUID index walked once for UUIDs held
        //    more than once and only those looked at (a million lookups took 2.6 s).
        let lastSample = try Int64.fetchOne(db.cachedStatement(sql: "SELECT max(id) FROM samples")) ?? 0
        let added = lastSample - min(max(samplesAfter, 0), lastSample)
        let duplicates = added >= lastSample / 4 ? Self.duplicateUUIDsByWalk : Self.duplicateUUIDsByLookup
        for r in try Row.fetchAll(db.cachedStatement(sql: duplicates), arguments: [samplesAfter]) {
            problems.append("sample \(r[0] as Int64) (\(r[1] as String)): its UUID hash already names another sample of the type")
        }

        // 5. Each summary the observation computed (not one it shares with an unchanged
        //    earlier observation) against its type's visible ranges, and its hash against
        //    its content (`StoredSummary`): the incremental paths of `Aggregates.update`
        //    checked outside them. A type of at most `recountLimit` records (or with no
        //    earlier summary) is recounted in full; a larger one is checked against its
        //    previous summary (checked when its own bundle was applied) and the ranges
        //    opened and closed since, so an incremental bundle's cost follows its change.
        //    `hp-server verify` recounts every summary in full.
        let chain = try Int64.fetchOne(db.cachedStatement(sql: "SELECT device_chain_id FROM observations WHERE id = ?"), arguments: [obs])
        for r in try Row.fetchAll(db.cachedStatement(sql: """
            SELECT \(StoredSummary.columns)
            FROM observation_type_summaries ts JOIN sample_types st ON st.id = ts.sample_type_id
            WHERE ts.observation_id = ?1 AND ts.daily_base_observation_id = ?1
            """), arguments: [obs]) {
            let summary = StoredSummary(r)
            if let chain, let p = try Aggregates.previousSummary(db, typeID: summary.typeID, before: obs, chain: chain),
               (p["visible_record_count"] as Int) > recountLimit {
                problems += try summary.problems(db, since: StoredSummary(p, typeIdentifier: summary.typeIdentifier))
            } else {
                problems += try summary.problems(db)
            }
        }
        return problems
    }

    /// The touched samples' events that open, replace or close a range, in sample order.
    static let touchedEvents = """
        SELECT e.sample_id, e.observation_id, e.event_kind, e.version_id, e.id
        FROM temp.hp_touched_samples t CROSS JOIN sample_observation_events e INDEXED BY idx_events_sample ON e.sample_id = t.sample_id
        WHERE e.event_kind IN \(EventKind.rangeKindsSQL)
        ORDER BY t.sample_id
        """
    /// The touched samples' stored ranges, in sample order.
    static let touchedRanges = """
        SELECT g.sample_id, g.version_id, g.first_observation_id, g.last_observation_id
        FROM temp.hp_touched_samples t CROSS JOIN sample_visibility_ranges g ON g.sample_id = t.sample_id
        ORDER BY t.sample_id
        """
    /// Samples added (rowid above the argument) whose UUID names another sample of their type: a lookup each.
    static let duplicateUUIDsByLookup = """
        SELECT s.id, st.type_identifier FROM samples s JOIN sample_types st ON st.id = s.sample_type_id
        WHERE s.id > ? AND s.sample_uuid_hash IS NOT NULL
          AND EXISTS (SELECT 1 FROM samples x INDEXED BY \(SampleIndexes.byUUID) WHERE x.sample_uuid_hash = s.sample_uuid_hash AND x.sample_type_id = s.sample_type_id AND x.id != s.id)
        LIMIT 5
        """
    /// UUID hashes (`u`) that more than one sample holds, whatever their types: one walk
    /// of the UUID index, grouped in its order (also `ArchiveVerifier`'s duplicate check).
    static let uuidsHeldMoreThanOnce = """
        SELECT sample_uuid_hash AS u FROM samples INDEXED BY \(SampleIndexes.byUUID) WHERE sample_uuid_hash IS NOT NULL
        GROUP BY sample_uuid_hash HAVING count(*) > 1
        """
    /// The same, from one walk of the UUID index: only UUIDs held more than once are looked at.
    static let duplicateUUIDsByWalk = """
        SELECT s.id, st.type_identifier
        FROM (\(uuidsHeldMoreThanOnce)) d
        CROSS JOIN samples s INDEXED BY \(SampleIndexes.byUUID) ON s.sample_uuid_hash = d.u
        JOIN sample_types st ON st.id = s.sample_type_id
        WHERE s.id > ?
          AND EXISTS (SELECT 1 FROM samples x INDEXED BY \(SampleIndexes.byUUID) WHERE x.sample_uuid_hash = s.sample_uuid_hash AND x.sample_type_id = s.sample_type_id AND x.id != s.id)
        LIMIT 5
        """
}
