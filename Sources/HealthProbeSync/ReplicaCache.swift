import Foundation
import GRDB
import HealthProbeArchive

/// The replicas the server keeps open between bundles, at most `capacity`
/// (`kept_replicas`), least recently used closed first. Reopening a replica for
/// a bundle (the connection, the schema, every statement prepared again) and
/// closing it (SQLite checkpoints the WAL on the last close) cost about 4 ms of
/// CPU per 1,000-sample bundle (`hp-bench apply`). A kept replica's page cache is
/// released after every apply; what stays is its connection and its prepared
/// statements, about 1 MB each.
package final class ReplicaCache: @unchecked Sendable {
    private let capacity: Int
    private let lock = NSLock()
    private var open: [String: Archive] = [:]
    private var order: [String] = []

    package init(capacity: Int = 64) { self.capacity = max(1, capacity) }

    /// The open replica of `chain`, opened with `opener` when not kept.
    package func replica(_ chain: String, opener: () throws -> Archive) throws -> Archive {
        if let kept = lock.withLock({ () -> Archive? in
            guard let a = open[chain] else { return nil }
            touch(chain)
            return a
        }) { return kept }
        let archive = try opener()
        // Checkpoints run after the acknowledgement (`checkpoint`), not inside the commit.
        try archive.writer.writeWithoutTransaction { try $0.execute(sql: "PRAGMA wal_autocheckpoint = 0") }
        lock.withLock {
            open[chain] = archive
            touch(chain)
            while order.count > capacity { open[order.removeFirst()] = nil }
        }
        return archive
    }

    /// Makes `chain` the most recently used (the lock is held).
    private func touch(_ chain: String) {
        order.removeAll { $0 == chain }
        order.append(chain)
    }

    /// Frees the page cache of a kept replica (after its apply).
    package func releaseMemory(_ chain: String) {
        guard let a = lock.withLock({ open[chain] }) else { return }
        a.releasePageCache()
    }

    /// Copies a kept replica's WAL into its database file (SQLite's passive
    /// checkpoint), once the bundle that wrote it is acknowledged. The commit was
    /// already synced; this keeps the WAL from growing and moves the copying out of
    /// the acknowledgement's path.
    ///
    /// It runs on a connection of its own, not the replica's writer, so that the
    /// chain's next apply does not wait for it: a passive checkpoint and a writer on
    /// another connection run side by side (SQLite's WAL). After a first sync of a
    /// million samples the copy takes seconds.
    package func checkpoint(_ chain: String) throws {
        guard let path = lock.withLock({ open[chain]?.path }) else { return }
        let connection = try DatabaseQueue(path: path)
        try connection.writeWithoutTransaction { _ = try $0.checkpoint(.passive) }
        try connection.close()
    }

    /// Closes a kept replica (after a failed apply, so the next one starts fresh).
    package func evict(_ chain: String) {
        lock.withLock {
            open[chain] = nil
            order.removeAll { $0 == chain }
        }
    }
}
