import Foundation
import GRDB

/// What nodes, the server and the CLIs read from and write to `bundle_log`.
extension Archive {
    /// The received bundles' count, last manifest hash and last receipt time.
    public func receivedBundles() async throws -> (count: Int, lastManifestHash: String?, lastRecordedAt: Double?) {
        try await writer.read { db in
            let s = try BundleLogRecord.receivedSummary(db)
            let last = try BundleLogRecord.lastReceived(db)
            return (s.count, last?.manifestHash, s.lastRecordedAt)
        }
    }

    /// The received bundles' log rows in sequence order.
    public func receivedBundleLog() async throws -> [BundleLogRecord] {
        try await writer.read { db in try BundleLogRecord.all().received().order(BundleLogRecord.Columns.sequence).fetchAll(db) }
    }

    /// The received bundles' links in sequence order.
    public func receivedBundleLinks() throws -> [(sequence: Int, manifestHash: String, previous: String?)] {
        try writer.read(BundleLogRecord.receivedLinks)
    }

    /// Whether the bundle at `sequence` was received.
    public func isBundleReceived(sequence: Int) throws -> Bool {
        try writer.read { db in try BundleLogRecord.isReceived(db, sequence: sequence) }
    }

    /// The chain-state digest after the received bundle at `sequence`, `nil` when none was received.
    public func chainStateAfterReceived(sequence: Int) throws -> ChainStateDigest.Result? {
        try writer.read { db in
            guard let obs = try BundleLogRecord.receivedObservation(db, sequence: sequence) else { return nil }
            return try ChainStateDigest.compute(db, observationID: obs)
        }
    }

    /// The chain-state digest after the received bundle at `sequence` (default: the
    /// latest), with the sequence; `nil` digest when no bundle has that sequence.
    public func receivedChainState(at: Int?) async throws -> (sequence: Int, state: ChainStateDigest.Result?) {
        try await writer.read { db in
            let seq = try at ?? BundleLogRecord.lastReceivedSequence(db) ?? 0
            guard let obs = try BundleLogRecord.receivedObservation(db, sequence: seq) else { return (seq, nil) }
            return (seq, try ChainStateDigest.compute(db, observationID: obs))
        }
    }

    /// The chain-state digest at observation `id`.
    public func chainState(observation id: Int64) throws -> ChainStateDigest.Result {
        try writer.read { db in try ChainStateDigest.compute(db, observationID: id) }
    }

    /// The chain-state digest at observation `id`.
    public func chainState(observation id: Int64) async throws -> ChainStateDigest.Result {
        try await writer.read { db in try ChainStateDigest.compute(db, observationID: id) }
    }

    /// The manifest hashes logged as sent for `chain`, by sequence, up to `sequence`.
    public func sentManifestHashes(chain: Int64, upTo sequence: Int) async throws -> [Int: String] {
        try await writer.read { db in try BundleLogRecord.sentManifestHashes(db, chain: chain, upTo: sequence) }
    }

    /// Logs a bundle the server acknowledged.
    public func recordSent(chain: Int64, sequence: Int, observation: Int64, manifestHash: String, previous: String?, items: Int, now: Double) async throws {
        try await writer.write { db in
            try BundleLogRecord.recordSent(db, chain: chain, sequence: sequence, observation: observation, manifestHash: manifestHash,
                                           previous: previous, items: items, now: now)
        }
    }
}
