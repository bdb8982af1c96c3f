import Foundation
import HealthProbeArchive

/// `hp-server compact`: each replica's free pages returned to the disk
/// (`ArchiveCompaction`), with no server running: a serving process holds its
/// replicas open and its applies would wait behind the copy.
public enum ReplicaCompaction {
    public struct ChainReport: Sendable, Codable, Equatable {
        public var chain: String
        public var report: ArchiveCompaction.Report
    }

    /// Compacts every replica, or the one of `chain` (a hash or unique prefix), in turn.
    /// `each` sees each chain's report as it is made.
    /// A replica at an older schema is migrated first (`onMigration(chain, from, to)` before).
    public static func run(_ store: ServerStore, chain: String? = nil,
                           onMigration: (_ chain: String, _ from: Int, _ to: Int) -> Void = { _, _, _ in },
                           step: (_ chain: String, ArchiveCompaction.Step) -> Void = { _, _ in },
                           each: (ChainReport) -> Void = { _ in }) throws -> [ChainReport] {
        let chains = try chain.map { [try store.chain(matching: $0)] } ?? store.chains()
        let lock = try FileLock(path: store.serverLockPath, busy: "another hp-server process holds \(store.serverLockPath) (a server serving \(store.root), or a verify of it); stop it before compacting its replicas")
        defer { withExtendedLifetime(lock) {} }
        return try chains.map { chain in
            let replica = try Archive.open(path: store.replicaPath(chain), durability: .full, singleConnection: true) { from, to in
                onMigration(chain, from, to)
            }
            let report: ArchiveCompaction.Report
            do {
                report = try ArchiveCompaction.run(replica, verifyCommand: "hp-server verify --full --chain \(chain.prefix(16))", step: { step(chain, $0) })
            } catch let e as ArchiveError {
                throw ArchiveError(e.code, "chain \(chain.prefix(16)): \(e.message)", cause: e.cause)
            }
            let r = ChainReport(chain: chain, report: report)
            each(r)
            return r
        }
    }
}
