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
/// commit, whose checkpoint takes milliseconds, `beforeNextTransaction` waits for it.
public final class BackgroundCheckpoints: Sendable {
    private let stage: ConsumerStage<Void>
    /// Commits whose checkpoint has not ended yet, and whether the last commit was small.
    private let progress = Progress()
    /// A commit of fewer bytes than this is small (its checkpoint is waited for before the next transaction).
    public static let smallCommitBytes = 32 << 20
    /// The archive and the checkpointing connection until `finish`: a closure kept a moment
    /// longer must not keep either open after its user is done.
    private let held: Held
    /// The writer's `wal_autocheckpoint` before.
    private let saved: Int

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
        let held = Held((archive, wal)), progress = self.progress
        self.held = held
        // Commits that came while one ran are covered by one checkpoint after it.
        stage = ConsumerStage(name: "healthprobe.checkpoint", depth: 2, batches: { _, more in
            var covered = 1
            while more() != nil { covered += 1 }
            // Busy or failed, the pages stay in the WAL for the next one: the stage goes on.
            try? held.value.withLock { $0?.wal }?.checkpoint()
            progress.ended(covered)
        })
    }

    /// After a commit of about `bytes`: a checkpoint follows the one running, if any (at most one waits).
    public func committed(bytes: Int) {
        progress.committed(small: bytes < Self.smallCommitBytes)
        guard stage.waiting == 0 else { return }  // the checkpoint waiting covers it
        progress.submitted()
        do { try stage.submit(()) } catch { progress.ended(1) }
    }

    /// Before the writer's next transaction: after a small commit, waits for the checkpoints
    /// running or waiting (milliseconds), so that the transaction starts the WAL over.
    public func beforeNextTransaction() {
        progress.waitIfLastSmall()
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

    /// Checkpoints submitted and not yet ended, under a lock, and whether the last commit was small.
    private final class Progress: @unchecked Sendable {
        private let condition = NSCondition()
        private var pending = 0
        private var lastSmall = false

        func committed(small: Bool) { condition.withLock { lastSmall = small } }
        func submitted() { condition.withLock { pending += 1 } }
        func ended(_ count: Int) {
            condition.withLock {
                pending = max(pending - count, 0)
                condition.broadcast()
            }
        }
        func waitIfLastSmall() {
            condition.withLock {
                guard lastSmall else { return }
                while pending > 0 { condition.wait() }
            }
        }
    }

    private final class Held: Sendable {
        let value: Mutex<(archive: Archive, wal: WALConnection)?>
        init(_ both: (archive: Archive, wal: WALConnection)) { value = Mutex(both) }
    }
}
