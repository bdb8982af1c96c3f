import Foundation
import GRDB
import GRDBSQLite
import Logging

/// An open v2 archive: a SQLite database in WAL mode with foreign keys on,
/// migrated to the latest schema. Writers hold an exclusive process lock;
/// opening for writing marks observations a crash left `running` as `interrupted`.
public final class Archive: Sendable {
    /// The database (a pool on disk, a queue in memory).
    let writer: any DatabaseWriter
    /// The file path, or `nil` in memory.
    public let path: String?
    public let logger: Logger
    private let lock: FileLock?

    /// How an archive is opened.
    public enum Mode: Sendable { case readWrite, readOnly }

    /// When a commit reaches the disk. `.normal` (SQLite `synchronous = NORMAL` in
    /// WAL mode): a commit survives a crash of the process but a power loss can undo
    /// the last commits (never corrupt); a node re-captures. `.full`: every commit is
    /// on disk before it returns; what the server acknowledges must be (replicas).
    public enum Durability: Sendable { case normal, full }

    /// Opens (creating if needed) the archive at `path`.
    /// `writerCacheMiB` bounds the writing connection's page cache (readers get 8 MiB).
    /// `singleConnection`: one connection for reads and writes (a queue, not a pool):
    /// cheaper to open and to keep open, for a writer whose readers open their own.
    /// `onMigration(from, to)` is called before an existing archive is migrated (which
    /// can take a while on a large one); the migration is also logged at `notice`.
    public static func open(path: String, mode: Mode = .readWrite, durability: Durability = .normal, writerCacheMiB: Int = 64,
                            singleConnection: Bool = false, clock: any ArchiveClock = SystemClock(),
                            logger: Logger = Archive.silentLogger,
                            onMigration: (_ from: Int, _ to: Int) -> Void = { _, _ in }) throws -> Archive {
        let directory = (path as NSString).deletingLastPathComponent
        if mode == .readOnly && !FileManager.default.fileExists(atPath: path) {
            throw ArchiveError(.notFound, "no archive at \(path); run `hp-node init` or a capture first")
        }
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let lock = mode == .readWrite ? try FileLock(path: path + ".lock") : nil
        var config = Configuration()
        config.foreignKeysEnabled = true
        // Read-only opens are read-only connections: they take no write lock, run no
        // migration and change nothing, so any number of them can run beside a writer.
        config.readonly = mode == .readOnly
        config.busyMode = .timeout(10)
        config.prepareDatabase { db in
            try ExactSumFunction.register(db)
            try db.execute(sql: durability == .full ? "PRAGMA synchronous = FULL" : "PRAGMA synchronous = NORMAL")
            // A large capture transaction grows the WAL file; once checkpointed it is
            // cut back to 64 MiB instead of keeping its largest size on disk.
            try db.execute(sql: """
                PRAGMA temp_store = FILE;
                PRAGMA temp.cache_size = -16384;
                PRAGMA journal_size_limit = 67108864;
                """)
            // The writer gets a large page cache; pool readers a small one, so
            // memory stays bounded however many connections read.
            try db.execute(sql: db.configuration.readonly ? "PRAGMA cache_size = -8192" : "PRAGMA cache_size = -\(max(writerCacheMiB, 1) * 1024)")
            SlowStatementLog.install(db)
        }
        let pool: any DatabaseWriter
        do {
            if singleConnection && mode == .readWrite {
                let queue = try DatabaseQueue(path: path, configuration: config)
                try queue.writeWithoutTransaction { db in
                    if try String.fetchOne(db, sql: "PRAGMA journal_mode") != "wal" { try db.execute(sql: "PRAGMA journal_mode = WAL") }
                }
                pool = queue
            } else {
                pool = try DatabasePool(path: path, configuration: config)
            }
        } catch {
            throw ArchiveError(.notAnArchive, "cannot open \(path) as a SQLite archive; it may be corrupt or not an archive", cause: error)
        }
        let archive = Archive(writer: pool, path: path, lock: lock, logger: logger)
        try archive.prepare(clock: clock, recoverInterrupted: mode == .readWrite, onMigration: onMigration)
        return archive
    }

    /// An in-memory archive (tests).
    public static func inMemory(clock: any ArchiveClock = SystemClock()) throws -> Archive {
        var config = Configuration()
        config.foreignKeysEnabled = true
        config.prepareDatabase { db in try ExactSumFunction.register(db) }
        let queue = try DatabaseQueue(configuration: config)
        let archive = Archive(writer: queue, path: nil, lock: nil, logger: Archive.silentLogger)
        try archive.prepare(clock: clock, recoverInterrupted: true)
        return archive
    }

    /// The default logger: libraries stay quiet unless the caller passes a logger.
    public static let silentLogger = Logger(label: "healthprobe.archive", factory: { _ in SwiftLogNoOpLogHandler() })

    init(writer: any DatabaseWriter, path: String?, lock: FileLock?, logger: Logger) {
        self.writer = writer
        self.path = path
        self.lock = lock
        self.logger = logger
    }

    /// Migrates with the given migration list (tests use it to simulate failures).
    func prepare(clock: any ArchiveClock, recoverInterrupted: Bool,
                 migrations: [ArchiveMigrations.Migration] = ArchiveMigrations.all,
                 onMigration: (_ from: Int, _ to: Int) -> Void = { _, _ in }) throws {
        try ArchiveMigrations.migrate(writer, migrations: migrations, now: clock.now()) { from, to in
            logger.notice("migrating the archive", metadata: ["archive.schema_from": "\(from)", "archive.schema_to": "\(to)"])
            onMigration(from, to)
        }
        if recoverInterrupted {
            try markInterrupted(now: clock.now())
            try restoreDeferredIndexes()
        }
    }

    /// Builds indexes a first load dropped and a crash kept it from building again.
    func restoreDeferredIndexes() throws {
        // A read first: most opens find nothing pending and need no write transaction.
        guard try writer.read(DeferredIndexes.pendingRecord) != nil else { return }
        let n = try buildDeferredIndexes()
        logger.warning("built indexes an interrupted first load had deferred", metadata: ["archive.indexes_built": "\(n)"])
    }

    /// Frees the page cache (what SQLite can drop without harm). On a single
    /// connection its prepared statements stay, which GRDB's `releaseMemory()`
    /// would also drop and the next write would prepare again; a pool gets
    /// `releaseMemory()` (its readers too).
    public func releasePageCache() {
        if let queue = writer as? DatabaseQueue {
            queue.inDatabase { db in if let c = db.sqliteConnection { sqlite3_db_release_memory(c) } }
        } else {
            (writer as? DatabasePool)?.releaseMemory()
        }
    }

    /// Whether this process opened the archive for writing (and holds its lock).
    public var isWritable: Bool { lock != nil }

    /// The schema version recorded in the archive.
    public func schemaVersion() throws -> Int {
        try writer.read(ArchiveMigrations.appliedVersion)
    }

    /// Marks observations and type runs a crash left `running` as `interrupted`.
    /// Committed pages stay as they are; no visibility range is closed.
    @discardableResult
    func markInterrupted(now: Double) throws -> Int {
        // A read first: most opens find nothing running and need no write transaction.
        let running = try writer.read { db in
            try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM observations WHERE status = 'running') OR EXISTS (SELECT 1 FROM observation_type_runs WHERE status = 'running')") ?? false
        }
        guard running else { return 0 }
        return try writer.write { db in
            try db.execute(sql: "UPDATE observation_type_runs SET status = 'interrupted', ended_at = ? WHERE status = 'running'", arguments: [now])
            try db.execute(sql: "UPDATE observations SET status = 'interrupted', ended_at = ? WHERE status = 'running'", arguments: [now])
            let n = db.changesCount
            if n > 0 { logger.warning("marked observations left running as interrupted", metadata: ["archive.interrupted_count": "\(n)"]) }
            return n
        }
    }
}
