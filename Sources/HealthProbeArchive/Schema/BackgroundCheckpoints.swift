import Foundation
import GRDB
import Synchronization

/// Checkpoints an archive's WAL on a connection and a thread of their own while its
/// writer goes on with large commits (a node's restore): each commit's pages are copied
/// into the file while the next bundle is applied, where the committing thread would
/// otherwise copy them itself before it could start the next (1.3-1.6 s after the first
/// bundle of a million-sample restore; docs/restore-measurements.md). Meanwhile the
/// writer's own commits do not checkpoint; `finish` waits for the checkpoint running,
/// checkpoints what is left and cuts the WAL file back, and gives the writer its setting
/// back. A checkpoint that fails leaves the pages in the WAL, committed, for the next one.
///
/// A transaction that starts while a checkpoint runs appends to the WAL instead of
/// starting it over: had every bundle started so, the WAL would grow by every bundle of
/// the restore (to 189 MB for a 41-bundle chain whose archive is 58 MB). So after a small
/// bundle's commit, whose checkpoint takes milliseconds, `beforeNextTransaction` waits for
/// the checkpoints not yet ended (one still copying a large bundle's pages included).
public final class BackgroundCheckpoints: Sendable {
    /// Each element asks for a checkpoint after the one running; one that carries a queue is
    /// told (the queue closed) once a checkpoint that covers it ended.
    private let stage: ConsumerStage<BoundedQueue<Void>?>
    /// The archive and the checkpointing connection until `finish`: a closure kept a moment
    /// longer must not keep either open after its user is done.
    private let held: Held
    /// The writer's `wal_autocheckpoint` before.
    private let saved: Int
    /// Whether the last bundle committed was small (below `smallBundleBytes`).
    private let lastSmall = Mutex(false)
    /// A bundle of fewer uncompressed bytes than this is small: the next transaction waits for its commit's checkpoint.
    public static let smallBundleBytes = 32 << 20

    /// Starts checkpointing beside `archive`'s writer; nil for an archive with no file (in memory).
    public static func start(_ archive: Archive) throws -> BackgroundCheckpoints? {
        guard let path = archive.path else { return nil }
        return try BackgroundCheckpoints(archive, wal: WALConnection(path: path))
    }

    private init(_ archive: Archive, wal: WALConnection) throws {
        saved = try archive.writer.writeWithoutTransaction { db in
            let saved = try Int.fetchOne(db, sql: "PRAGMA wal_autocheckpoint") ?? 1000
            try db.execute(sql: "PRAGMA wal_autocheckpoint = 0")
            return saved
        }
        let held = Held((archive, wal))
        self.held = held
        // Commits that came while one ran are covered by one checkpoint after it.
        stage = ConsumerStage(name: "healthprobe.checkpoint", depth: 2, batches: { first, more in
            var waiting = [first].compactMap { $0 }
            while let next = more() { if let next { waiting.append(next) } }
            // Busy or failed, the pages stay in the WAL for the next one: the stage goes on.
            try? held.value.withLock { $0?.wal }?.checkpoint()
            for w in waiting { w.close() }
        })
    }

    /// After the commit of a bundle of `bytes` uncompressed bytes: a checkpoint follows the one
    /// running, if any (at most one waits).
    public func committed(bytes: Int) {
        lastSmall.withLock { $0 = bytes < Self.smallBundleBytes }
        if stage.waiting == 0 { try? stage.submit(nil) }
    }

    /// Before the writer's next transaction: after a small bundle, waits for a checkpoint that
    /// follows the one running, if any, so that the transaction starts the WAL over. Called as
    /// the next bundle's apply starts rather than at the end of `committed`: the wait then runs
    /// while that bundle's parts arrive. A 41-bundle restore, alternated: waiting in `committed`
    /// 14.9-15.9 s, waiting here 13.1-13.8 s, no wait at all 13.2-14.8 s.
    public func beforeNextTransaction() {
        guard lastSmall.withLock({ $0 }) else { return }
        let ended = BoundedQueue<Void>(capacity: 1)
        guard (try? stage.submit(ended)) != nil else { return }
        _ = try? ended.take()
    }

    /// Waits for the checkpoint running or waiting, checkpoints the rest and cuts the WAL file
    /// (call it with no transaction open), gives the writer its setting back, and lets go of both.
    public func finish() {
        try? stage.finish()
        guard let archive = held.value.withLock({ h in defer { h = nil }; return h?.archive }) else { return }
        try? archive.writer.writeWithoutTransaction { db in
            _ = try db.checkpoint(.truncate)
            try db.execute(sql: "PRAGMA wal_autocheckpoint = \(saved)")
        }
    }

    private final class Held: Sendable {
        let value: Mutex<(archive: Archive, wal: WALConnection)?>
        init(_ both: (archive: Archive, wal: WALConnection)) { value = Mutex(both) }
    }
}
