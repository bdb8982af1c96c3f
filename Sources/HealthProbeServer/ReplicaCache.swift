import Foundation
import HealthProbeArchive
import HealthProbeProtocol

/// The replicas the server keeps open between bundles, at most `capacity`
/// (`kept_replicas`), least recently used closed first. Reopening a replica for
/// a bundle (the connection, the schema, every statement prepared again) and
/// closing it (SQLite checkpoints the WAL on the last close) cost about 4 ms of
/// CPU per 1,000-sample bundle (`hp-bench apply`). A kept replica's page cache is
/// released after every apply; what stays is its connection with its prepared
/// statements and a second connection for checkpoints, about 1-1.5 MB each.
/// `@unchecked Sendable`: `open`, `checkpointers`, `applied`, `order` and `pacedCount` are read and written only under `lock`.
package final class ReplicaCache: @unchecked Sendable {
    private let capacity: Int
    private let lock = NSLock()
    private var open: [String: Archive] = [:]
    /// Each kept replica's second connection, for checkpoints and WAL cuts (opened on first use).
    private var checkpointers: [String: WALConnection] = [:]
    /// The last bundle applied to a kept replica by this server (sequence, manifest hash).
    private var applied: [String: (sequence: Int, manifestHash: String)] = [:]
    private var order: [String] = []

    package init(capacity: Int = ServerConfig.defaultKeptReplicas) { self.capacity = max(1, capacity) }

    // Both connections of a kept replica neither checkpoint in a commit nor cut the WAL
    // file (`Archive.deferWALWork`, `WALConnection`); `checkpoint` and `cutWAL` do, outside the applies.

    /// The open replica of `chain`, opened with `opener` when not kept.
    package func replica(_ chain: String, opener: () throws -> Archive) throws -> Archive {
        if let kept = lock.withLock({ () -> Archive? in
            guard let a = open[chain] else { return nil }
            touch(chain)
            return a
        }) { return kept }
        let archive = try opener()
        // Checkpoints run after the acknowledgement (`checkpoint`), not inside the commit;
        // so does cutting a grown WAL file back (never in an apply's commit: see `checkpoint`).
        try archive.deferWALWork()
        lock.withLock {
            open[chain] = archive
            touch(chain)
            while order.count > capacity {
                let closed = order.removeFirst()
                open[closed] = nil
                checkpointers[closed] = nil
                applied[closed] = nil
            }
        }
        return archive
    }

    /// Makes `chain` the most recently used (the lock is held).
    private func touch(_ chain: String) {
        order.removeAll { $0 == chain }
        order.append(chain)
    }

    /// Records the bundle just committed to a kept replica, for `lastApplied`.
    package func noteApplied(_ chain: String, sequence: Int, manifestHash: String) {
        lock.withLock { if open[chain] != nil { applied[chain] = (sequence, manifestHash) } }
    }

    /// The last bundle committed to a kept replica since it was opened, when one was:
    /// what its `bundle_log` would answer, without opening a connection to ask.
    package func lastApplied(_ chain: String) -> (sequence: Int, manifestHash: String)? {
        lock.withLock { applied[chain] }
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
    ///
    /// That connection is kept with the replica: opening one (the schema read
    /// again) for every bundle cost about 1 ms of CPU.
    ///
    /// When the WAL file holds `pacedFromWALBytes` or more, the database file's dirty
    /// pages are written back while the copy runs (`WritebackPacer`) instead of all
    /// at its closing fsync, during which every other commit on the file system
    /// waited (0.6-1.4 s for the 1,000-sample apply after a million-sample one).
    package func checkpoint(_ chain: String, pacedFromWALBytes: Int = 64 << 20) throws {
        guard let connection = try checkpointer(chain), let path = lock.withLock({ open[chain]?.path }) else { return }
        let pacer = Self.walBytes(path) >= pacedFromWALBytes ? WritebackPacer(path: path) : nil
        defer {
            if let pacer {
                pacer.stop()
                lock.withLock { pacedCount += 1 }
            }
        }
        try connection.checkpoint()
    }

    /// The size of the WAL file of the database at `path` (0 when there is none).
    private static func walBytes(_ path: String) -> Int {
        (try? FileManager.default.attributesOfItem(atPath: path + "-wal")[.size] as? Int) ?? 0
    }

    /// Checkpoints that paced their writeback (tests).
    package var pacedCheckpoints: Int { lock.withLock { pacedCount } }
    private var pacedCount = 0

    /// The kept replica's checkpoint connection, opened when first needed; nil when the replica is not kept.
    private func checkpointer(_ chain: String) throws -> WALConnection? {
        guard let path = lock.withLock({ open[chain]?.path }) else { return nil }
        if let kept = lock.withLock({ checkpointers[chain] }) { return kept }
        // Not cut by this connection's commits either (`cutWAL` sets its own limit per step).
        let connection = try WALConnection(path: path)
        return lock.withLock {
            // Kept only while its replica is (an eviction may have come in between).
            guard open[chain] != nil else { return connection }
            if let other = checkpointers[chain] { return other }
            checkpointers[chain] = connection
            return connection
        }
    }

    /// Cuts a kept replica's WAL file back by one step of `stepBytes`, towards
    /// `keepWALBytes`; true while more steps are left. A large bundle leaves a large
    /// WAL file (781 MB after a million samples); SQLite cuts it in the first commit
    /// after the WAL restarts, and freeing 1.7 GB on ext4 takes 0.8 s, which would
    /// land in the next apply's commit (replicas' own connections never cut:
    /// `journal_size_limit = -1`). Here each step is one tiny write transaction on a
    /// connection of its own (a row written and deleted: pages change, content
    /// does not); the server runs each step in the chain's turn, so an apply waits
    /// for one step at most.
    package func cutWAL(_ chain: String, keepWALBytes: Int = 64 << 20, stepBytes: Int = 128 << 20) throws -> Bool {
        guard let path = lock.withLock({ open[chain]?.path }) else { return false }
        let size = Self.walBytes(path)
        guard size > keepWALBytes, let connection = try checkpointer(chain) else { return false }
        let target = max(keepWALBytes, size - stepBytes)
        let restarted = try connection.cutWALStep(targetBytes: target)
        let now = Self.walBytes(path)
        return restarted && now < size && now > keepWALBytes
    }

    /// Closes a kept replica (after a failed apply, so the next one starts fresh).
    package func evict(_ chain: String) {
        lock.withLock {
            open[chain] = nil
            checkpointers[chain] = nil
            applied[chain] = nil
            order.removeAll { $0 == chain }
        }
    }
}
