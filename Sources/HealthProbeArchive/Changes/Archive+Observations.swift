import Foundation
import GRDB

/// What the CLIs, the node and the simulator read about a chain's observations.
extension Archive {
    /// The archive's status counts for `chain`.
    public func status(chain: Int64) async throws -> ObservationQueries.Status {
        try await writer.read { db in try ObservationQueries.status(db, chainID: chain) }
    }

    /// The archive's storage figures.
    public func storage() async throws -> ArchiveCompaction.Storage {
        try await writer.read(ArchiveCompaction.Storage.read)
    }

    /// The chain-state digest at observation `at` (default: `chain`'s latest), with the
    /// observation; `nil` when the chain has no observation.
    public func chainState(chain: Int64, at: Int64?) async throws -> (observation: Int64, state: ChainStateDigest.Result)? {
        try await writer.read { db in
            guard let obs = try at ?? ObservationQueries.latestObservationID(db, chainID: chain) else { return nil }
            return (obs, try ChainStateDigest.compute(db, observationID: obs))
        }
    }

    /// Observation `id`'s changes by type (default: `chain`'s latest observation);
    /// `nil` when the chain has no observation.
    public func changes(chain: Int64, observation: Int64?) async throws -> (observation: Int64, rows: [TypeChangeRow])? {
        try await writer.read { db in
            guard let id = try observation ?? ObservationQueries.latestObservationID(db, chainID: chain) else { return nil }
            return (id, try ObservationQueries.changes(db, observationID: id))
        }
    }

    /// Observation `id`'s capture window (a Health Auto Export push's; nil for other
    /// captures) and, per type, how late its new records arrived (`ObservationLateness`).
    public func captureDetails(observation id: Int64) async throws -> (window: CaptureWindowNote?, lateness: [String: Double]) {
        try await writer.read { db in
            (CaptureWindowNote.parse(try ObservationQueries.notes(db, id: id)), try ObservationLateness.byType(db, observationID: id))
        }
    }

    /// Writes observation `at`'s bundle of `chain` in line form to `path`, building the
    /// chain's earlier bundles (streamed) for its previous manifest hash.
    public func writeBundle(chain: Int64, observation at: Int64, to path: String) async throws -> BundleFile.Written {
        try await writer.read { db in
            let ids = try Int64.fetchAll(db, sql: "SELECT id FROM observations WHERE device_chain_id = ? AND id <= ? ORDER BY id", arguments: [chain, at])
            guard ids.last == at else { throw ArchiveError(.notFound, "no observation \(at) in this device chain; list them with `hp-node observations`") }
            var previous: String?
            for id in ids.dropLast() {
                previous = try ObservationBundleBuilder.build(db, observationID: id, previousManifestHash: previous) { _, _, _ in }.2
            }
            return try BundleFile.write(db, observationID: at, previousManifestHash: previous, to: path)
        }
    }

    /// The manifest hash of observation `obs`'s bundle, linked to `previous` (built, not kept).
    public func manifestHash(observation obs: Int64, previous: String?) async throws -> String {
        try await writer.read { db in
            try ObservationBundleBuilder.build(db, observationID: obs, previousManifestHash: previous) { _, _, _ in }.2
        }
    }

    /// `chain`'s observations in id order, each with whether it is still running.
    public func observationsWithRunning(chain: Int64) async throws -> [(id: Int64, running: Bool)] {
        try await writer.read { db in
            try Row.fetchAll(db, sql: "SELECT id, status FROM observations WHERE device_chain_id = ? ORDER BY id", arguments: [chain])
                .map { row -> (id: Int64, running: Bool) in (row["id"], (row["status"] as String) == "running") }
        }
    }

    /// How many observations of `chain` the simulator made.
    public func simulatorCaptureCount(chain: Int64) throws -> Int {
        try writer.read { db in
            try Int.fetchOne(db, sql: "SELECT count(*) FROM observations WHERE trigger_reason = 'simulator' AND device_chain_id = ?", arguments: [chain]) ?? 0
        }
    }

    /// The notes of `chain`'s latest simulator capture that ended (not running or interrupted:
    /// the simulator records its position only once a capture ends); `nil` when none.
    public func lastSimulatorNotes(chain: Int64) throws -> String? {
        try writer.read { db in
            try String.fetchOne(db, sql: """
                SELECT notes FROM observations WHERE trigger_reason = 'simulator' AND device_chain_id = ? AND status NOT IN ('running', 'interrupted')
                ORDER BY id DESC LIMIT 1
                """, arguments: [chain])
        }
    }

    /// The anchor (bytes) after `type`'s last completed run in `chain`, `nil` when none.
    public func lastAnchor(chain: Int64, type: String) throws -> Data? {
        try writer.read { db in
            try Data.fetchOne(db, sql: """
                SELECT t.anchor_after FROM observation_type_runs t
                JOIN observations o ON o.id = t.observation_id
                JOIN sample_types st ON st.id = t.sample_type_id
                WHERE st.type_identifier = ? AND o.device_chain_id = ? AND t.status IN ('completed', 'needs_review') AND t.anchor_after IS NOT NULL
                ORDER BY t.observation_id DESC LIMIT 1
                """, arguments: [type, chain])
        }
    }
}
