import Foundation
import GRDB
import Logging
import HealthProbeCanonical

/// One capture: one `observations` row, then type runs, then a final status
/// (database-design.md section 7). Pages commit one transaction each, all
/// under this observation's id. Use from one task at a time.
public final class CaptureSession {
    public let node: NodeArchive
    public let observationID: Int64
    public let observedAt: Double
    /// The temporary table (on the writer connection) of the samples this capture's
    /// runs saw: `sample_id INTEGER PRIMARY KEY, type_run_id`. A sample has one type,
    /// so only its type's run can see it. Dropped when the capture ends.
    public var seenTable: String { "temp.hp_seen_\(observationID)" }
    let normalizer: SampleNormalizer
    var caches = WriteCaches()
    /// Runs not yet completed or failed (several may be open at once).
    private(set) var openRuns: [Int64: TypeRunWriter] = [:]
    private(set) var finished = false

    var archive: Archive { node.archive }
    var logger: Logger { node.archive.logger }

    /// Whether this capture dropped the sample tables' lookup indexes until its records are in.
    public private(set) var indexesDeferred = false

    /// Starts a capture: writes the observation with status `running`. Into an archive
    /// with no sample yet, `deferIndexes` drops the sample tables' lookup indexes (not the
    /// UUID index, which the capture's lookup names) until `buildDeferredIndexes()`, which
    /// `finish`, `abandon` and `revert` call (docs/decisions/2026-11-25-bulk-first-import.md).
    public static func begin(_ node: NodeArchive, context: ObservationContext, deferIndexes: Bool = true) throws -> CaptureSession {
        let now = node.clock.now()
        let schema = try node.archive.schemaVersion()
        let (id, observedAt): (Int64, Double) = try node.archive.writer.write { db in
            // Observations of a chain follow one another in time (Protocol/bundles.md section 5.2):
            // a device clock set back gives the previous observation's instant, never an earlier one.
            let previous = try Double.fetchOne(db, sql: "SELECT max(observed_at) FROM observations WHERE device_chain_id = ?", arguments: [node.deviceChainID])
            let observedAt = max(CanonicalDate.normalize(now), previous ?? -Double.infinity)
            try db.execute(sql: """
                INSERT INTO observations(device_chain_id, observed_at, started_at, status, trigger_reason, app_version,
                    os_version, time_zone_identifier, time_zone_seconds_from_gmt, schema_version, selected_type_set_hash, notes,
                    samples_before, versions_before)
                VALUES (?, ?, ?, 'running', ?, ?, ?, ?, ?, ?, ?, ?,
                    (SELECT ifnull(max(id), 0) FROM samples), (SELECT ifnull(max(id), 0) FROM sample_versions))
                """, arguments: [node.deviceChainID, observedAt, now, context.triggerReason.rawValue, context.appVersion,
                                 SampleNormalizer.cleanOSVersion(context.osVersion), context.timeZoneIdentifier,
                                 context.timeZoneSecondsFromGMT, schema,
                                 context.selectedTypes.isEmpty ? nil : ObservationContext.typeSetHash(context.selectedTypes),
                                 context.notes])
            return (db.lastInsertedRowID, observedAt)
        }
        node.archive.logger.info("observation started", metadata: ["observation.id": "\(id)", "observation.trigger": "\(context.triggerReason.rawValue)"])
        let session = CaptureSession(node: node, observationID: id, observedAt: observedAt)
        session.indexesDeferred = try deferIndexes && node.archive.deferIndexesForFirstLoad(keeping: [SampleIndexes.byUUID])
        return session
    }

    /// Builds the lookup indexes `begin` deferred (nothing when it deferred none). Call it
    /// once every record is written, before anything reads through those indexes.
    public func buildDeferredIndexes() throws {
        guard indexesDeferred else { return }
        try archive.buildDeferredIndexes()
        indexesDeferred = false
    }

    init(node: NodeArchive, observationID: Int64, observedAt: Double) {
        self.node = node
        self.observationID = observationID
        self.observedAt = observedAt
        normalizer = SampleNormalizer(hasher: node.hasher)
    }

    /// Starts a type run. One run is active at a time; finish it before the next.
    public func beginTypeRun(_ type: SampleTypeDescriptor, kind: TypeRunKind, anchorBefore: [UInt8]? = nil) throws -> TypeRunWriter {
        guard !finished else { throw ArchiveError(.invalidState, "observation \(observationID) is already finished") }
        let now = node.clock.now()
        let chain = node.deviceChainID
        let obs = observationID
        let (typeID, runID, previousVerifiedAt, typeWasEmpty, zone): (Int64, Int64, Double?, Bool, (String?, Int?)) = try archive.writer.write { db in
            // A type's name and category are fixed when the archive first stores it: every
            // bundle of an observation that names the type carries them, and a bundle built
            // again (after a lost acknowledgement, `hp-node bundle`) must hash as it did.
            try db.execute(sql: "INSERT OR IGNORE INTO sample_types(type_identifier, display_name, category) VALUES (?, ?, ?)",
                           arguments: [type.identifier, type.displayName, type.category?.rawValue])
            let typeID = try Int64.fetchOne(db, sql: "SELECT id FROM sample_types WHERE type_identifier = ?", arguments: [type.identifier])!
            if let existing = try Row.fetchOne(db, sql: "SELECT id, status FROM observation_type_runs WHERE observation_id = ? AND sample_type_id = ?", arguments: [obs, typeID]) {
                throw ArchiveError(.invalidState, "observation \(obs) already has a \(existing["status"] as String) type run for \(type.identifier)")
            }
            try db.execute(sql: """
                INSERT INTO observation_type_runs(observation_id, sample_type_id, status, started_at, anchor_before, run_kind)
                VALUES (?, ?, 'running', ?, ?, ?)
                """, arguments: [obs, typeID, now, anchorBefore.map { Data($0) }, kind.rawValue])
            let runID = db.lastInsertedRowID
            let prev = try Double.fetchOne(db, sql: """
                SELECT o.observed_at FROM observation_type_runs t JOIN observations o ON o.id = t.observation_id
                WHERE t.sample_type_id = ? AND o.device_chain_id = ? AND t.observation_id < ?
                  AND t.status IN ('completed', 'needs_review')
                ORDER BY t.observation_id DESC LIMIT 1
                """, arguments: [typeID, chain, obs])
            try db.execute(sql: "CREATE TABLE IF NOT EXISTS \(seenTable)(sample_id INTEGER PRIMARY KEY, type_run_id INTEGER NOT NULL)")
            // Only this run writes samples of the type from here on (one run per type and observation, one writer).
            let empty = try !Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM samples WHERE sample_type_id = ?)", arguments: [typeID])!
            let zone = try Row.fetchOne(db, sql: "SELECT time_zone_identifier, time_zone_seconds_from_gmt FROM observations WHERE id = ?", arguments: [obs])
            return (typeID, runID, prev, empty, (zone?[0], zone?[1]))
        }
        let run = TypeRunWriter(session: self, type: type, kind: kind, typeID: typeID, runID: runID,
                                previousVerifiedAt: previousVerifiedAt ?? observedAt, typeWasEmpty: typeWasEmpty,
                                zone: zone)
        openRuns[runID] = run
        return run
    }

    /// Ends the capture, deriving the final status from its type runs.
    @discardableResult
    public func finish() throws -> ObservationStatus {
        if let run = openRuns.values.first(where: { !$0.isFinished }) {
            throw ArchiveError(.invalidState, "type run for \(run.type.identifier) is still open; complete or fail it before finishing the observation")
        }
        try buildDeferredIndexes()
        let now = node.clock.now()
        let obs = observationID
        let status: ObservationStatus = try archive.writer.write { db in
            let statuses = try String.fetchAll(db, sql: "SELECT status FROM observation_type_runs WHERE observation_id = ?", arguments: [obs])
                .compactMap(TypeRunStatus.init(rawValue:))
            let status = Self.overallStatus(statuses)
            try db.execute(sql: "UPDATE observations SET status = ?, ended_at = ? WHERE id = ?", arguments: [status.rawValue, now, obs])
            try db.execute(sql: "DROP TABLE IF EXISTS \(seenTable)")
            return status
        }
        finished = true
        logger.info("observation finished", metadata: ["observation.id": "\(obs)", "observation.status": "\(status.rawValue)"])
        return status
    }

    /// Marks the capture failed (for example, the source could not be read at all).
    public func abandon(reason: String) throws {
        // If building the indexes fails here, the next writable open builds them.
        try? buildDeferredIndexes()
        let now = node.clock.now()
        let obs = observationID
        try archive.writer.write { db in
            try db.execute(sql: "UPDATE observation_type_runs SET status = 'failed', ended_at = ?, error_kind = 'abandoned' WHERE observation_id = ? AND status = 'running'", arguments: [now, obs])
            try db.execute(sql: "UPDATE observations SET status = 'failed', ended_at = ?, notes = ? WHERE id = ?", arguments: [now, reason, obs])
            try db.execute(sql: "DROP TABLE IF EXISTS \(seenTable)")
        }
        finished = true
        for run in openRuns.values { run.isFinished = true }
    }

    /// Undoes everything this observation wrote, in one transaction, and marks
    /// it `failed` with `reason`: ranges it closed are reopened; events,
    /// relationships, ranges, versions and samples it created are deleted. The
    /// archive's visible state is then exactly what it was before the capture;
    /// the observation and its type runs remain as the record of the attempt.
    public func revert(reason: String) throws {
        // The deletes below find the observation's rows through the indexes; if building
        // them fails here, the next writable open builds them.
        try? buildDeferredIndexes()
        let now = node.clock.now()
        let obs = observationID
        try archive.writer.write { db in
            try db.execute(sql: """
                DELETE FROM sample_visibility_ranges WHERE first_observation_id = ?;
                UPDATE sample_visibility_ranges SET last_observation_id = NULL, last_seen_at = NULL WHERE last_observation_id = ?;
                DELETE FROM sample_observation_events WHERE observation_id = ?;
                DELETE FROM sample_relationships WHERE observation_id = ?;
                DELETE FROM sample_versions WHERE id > (SELECT ifnull(versions_before, 0) FROM observations WHERE id = ?1) AND created_observation_id = ?1;
                DELETE FROM samples WHERE id > (SELECT ifnull(samples_before, 0) FROM observations WHERE id = ?1) AND first_seen_observation_id = ?1;
                DELETE FROM capture_pages WHERE type_run_id IN (SELECT id FROM observation_type_runs WHERE observation_id = ?);
                UPDATE observation_type_runs SET status = 'failed', ended_at = ?, error_kind = coalesce(error_kind, 'reverted'),
                    inserted_event_count = 0, deleted_event_count = 0, verified_visible_count = NULL
                WHERE observation_id = ?;
                UPDATE observations SET status = 'failed', ended_at = ?, notes = ? WHERE id = ?;
                """, arguments: [obs, obs, obs, obs, obs, obs, obs, now, obs, now, reason, obs])
            try db.execute(sql: "DROP TABLE IF EXISTS \(seenTable)")
        }
        caches = WriteCaches()
        finished = true
        for run in openRuns.values { run.isFinished = true }
        logger.warning("observation reverted", metadata: ["observation.id": "\(obs)"])
    }

    /// Replaces the observation's context fields learned during capture
    /// (an export's date and UTC offset, importer notes).
    public func updateContext(timeZoneSecondsFromGMT: Int?, notes: String?) throws {
        let obs = observationID
        try archive.writer.write { db in
            try db.execute(sql: "UPDATE observations SET time_zone_seconds_from_gmt = coalesce(?, time_zone_seconds_from_gmt), notes = coalesce(?, notes) WHERE id = ?",
                           arguments: [timeZoneSecondsFromGMT, notes, obs])
        }
    }

    /// The observation status implied by its type runs.
    static func overallStatus(_ runs: [TypeRunStatus]) -> ObservationStatus { ObservationStatus.implied(by: runs) }
}

/// Small id caches for sources, revisions, devices and metadata (bounded).
struct WriteCaches {
    var sources: [NormalizedSample.Source: Int64] = [:]
    var revisions: [RevisionKey: Int64] = [:]
    var devices: [String: Int64] = [:]
    var metadata: [String: Int64] = [:]

    struct RevisionKey: Hashable {
        var sourceID: Int64
        var revision: NormalizedSample.Revision
    }

    mutating func trim() {
        if metadata.count > 20_000 { metadata.removeAll(keepingCapacity: true) }
        if devices.count > 20_000 { devices.removeAll(keepingCapacity: true) }
        if revisions.count > 20_000 { revisions.removeAll(keepingCapacity: true) }
        if sources.count > 20_000 { sources.removeAll(keepingCapacity: true) }
    }
}
