import Foundation
import GRDB

/// What a restore reads from a replica (the server) about a bundle it sends
/// (Protocol/README.md section 8): the logged bundle, and the observation whose chain
/// state follows it (`ChainStateDigest.compute`).
public struct RestorePoint: Sendable, Equatable {
    public var sequence: Int
    public var manifestHash: String
    public var itemCount: Int
    public var observationID: Int64
    /// The bundle's format (Protocol/bundles.md): 2 is sent only in sessions of protocol version 4.
    public var bundleFormat: Int
}

extension RestorePoint {
    /// The received bundle at `sequence` as the log holds it; nil when the replica has none.
    public static func at(_ db: Database, sequence: Int) throws -> RestorePoint? {
        guard let row = try BundleLogRecord.all().received().filter(BundleLogRecord.Columns.sequence == sequence).fetchOne(db) else { return nil }
        return RestorePoint(sequence: sequence, manifestHash: row.manifestHash, itemCount: row.itemCount, observationID: row.observationID,
                            bundleFormat: try ArchiveMetadataRecord.bundleFormat(db, sequence: sequence))
    }
}

extension Archive {
    /// Applies a bundle fetched from the server (`lines`, verified as a replica verifies
    /// it) to this node's archive, in one transaction that also checks, before it
    /// commits, that the chain state after it equals `expected` and logs the bundle as
    /// sent (the server holds it). Nothing is stored when any check fails.
    /// `transferChecked`, called first before the commit, throws when the lines did not
    /// arrive whole (they are applied while they arrive).
    /// `expected` is asked for once the lines ended (the server may send it after the parts).
    public func applyRestored(lines: some Sequence<[UInt8]>, manifestHash: String, sequence: Int, chain: Int64,
                              expected: () throws -> ChainStateDigest.Result, now: Double, bundleBytes: Int,
                              transferChecked: () throws -> Void = {}) throws {
        // The writer's page cache held to `restoreCacheKiB` while the bundle is applied
        // (as a server's replica is), restored after.
        let saved = try writer.writeWithoutTransaction { db in try Int.fetchOne(db, sql: "PRAGMA main.cache_size") } ?? -2000
        if saved < -Self.restoreCacheKiB {
            try writer.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA main.cache_size = -\(Self.restoreCacheKiB)") }
        }
        defer { try? writer.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA main.cache_size = \(saved)") } }
        _ = try BundleApplier.apply(self, lines: lines, manifestHash: manifestHash, now: now, indexes: .automatic(bundleBytes: bundleBytes), beforeCommit: { db, outcome in
            try transferChecked()
            let expected = try expected()
            guard case .applied(let observation, let applied) = outcome, applied == sequence else {
                throw ArchiveError(.invalidState, "bundle \(sequence) of the server is already in this archive; restore only continues an archive it made")
            }
            let state = try ChainStateDigest.compute(db, observationID: observation)
            guard state == expected else {
                throw ArchiveError(.invalidState, "after bundle \(sequence) this archive's chain state (\(state.visibleCount) visible records, digest \(state.digest.prefix(16))...) is not the server's (\(expected.visibleCount), \(expected.digest.prefix(16))...); nothing of it was kept")
            }
            let row = try BundleLogRecord.all().received().filter(BundleLogRecord.Columns.sequence == sequence).fetchOne(db)
            try BundleLogRecord.recordSent(db, chain: chain, sequence: sequence, observation: observation, manifestHash: manifestHash,
                                           previous: row?.previousManifestHash, items: row?.itemCount ?? 0, now: now)
        })
    }

    /// The page cache of a restore's apply, in KiB (a server's replica applies with 48 MiB):
    /// a node's restore also holds the parts in flight and the threads that verify them.
    static let restoreCacheKiB = 32 * 1024

    /// The last bundle this archive received from a restore, 0 when none; and whether
    /// it holds observations no restore made (an archive a restore must not touch).
    public func restoreProgress(chain: Int64) throws -> (lastSequence: Int, ownObservations: Int) {
        try writer.read { db in
            let last = try BundleLogRecord.lastReceivedSequence(db) ?? 0
            let received = try BundleLogRecord.all().received().fetchCount(db)
            let observations = try ObservationQueries.count(db, chainID: chain)
            return (last, observations - received)
        }
    }
}
