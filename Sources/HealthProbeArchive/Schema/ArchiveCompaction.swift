import Foundation
import GRDB
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Returns the pages an archive no longer uses to the disk (SQLite `VACUUM`).
/// A migration that rebuilds a table leaves the old table's pages in the file as
/// free pages; later writes reuse them, but the file never shrinks by itself.
///
/// `VACUUM` copies the archive into a temporary file (SQLite's temporary directory)
/// and writes the copy back through the WAL, in one transaction: a crash leaves the
/// archive as it was. Before it starts, the free disk for both copies is checked;
/// after it, the chain-state digest of each chain's latest observation and every
/// table's row count must be what they were.
public enum ArchiveCompaction {
    /// What a compaction found and did.
    public struct Report: Codable, Sendable, Equatable {
        public var pageSize: Int
        public var pagesBefore: Int
        public var freePagesBefore: Int
        public var pagesAfter: Int
        public var bytesBefore: Int
        public var bytesAfter: Int
        /// False when too few pages were free to be worth it (`isWorthCompacting`; nothing was done).
        public var compacted: Bool
        /// The digests compared before and after (one per device chain with an observation).
        public var digestsCompared: Int
        /// The whole compaction, and the copy alone (the rest is the checks before and after).
        public var seconds: Double
        public var copySeconds: Double
    }

    /// The archive file's pages and how many are free.
    public struct Storage: Codable, Sendable, Equatable {
        public var pageSize: Int
        public var pages: Int
        public var freePages: Int
        public var bytes: Int { pages * pageSize }
        /// Whether `compact` would return the free pages (`isWorthCompacting`).
        public var worthCompacting: Bool { ArchiveCompaction.isWorthCompacting(pages: pages, freePages: freePages) }

        enum CodingKeys: String, CodingKey { case pageSize, pages, freePages, bytes, worthCompacting }

        public init(pageSize: Int, pages: Int, freePages: Int) {
            self.pageSize = pageSize
            self.pages = pages
            self.freePages = freePages
        }

        public init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            self.init(pageSize: try c.decode(Int.self, forKey: .pageSize), pages: try c.decode(Int.self, forKey: .pages),
                      freePages: try c.decode(Int.self, forKey: .freePages))
        }

        /// Also writes the derived `bytes` and `worth_compacting`, for tools.
        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(pageSize, forKey: .pageSize)
            try c.encode(pages, forKey: .pages)
            try c.encode(freePages, forKey: .freePages)
            try c.encode(bytes, forKey: .bytes)
            try c.encode(worthCompacting, forKey: .worthCompacting)
        }

        public static func read(_ db: Database) throws -> Storage {
            Storage(pageSize: try Int.fetchOne(db, sql: "PRAGMA page_size") ?? 4096, pages: try Int.fetchOne(db, sql: "PRAGMA page_count") ?? 0,
                    freePages: try Int.fetchOne(db, sql: "PRAGMA freelist_count") ?? 0)
        }
    }

    /// A file system's free space, as an unprivileged writer may use it.
    public struct Volume: Sendable, Equatable {
        public var device: UInt64
        public var availableBytes: Int64

        public init(device: UInt64, availableBytes: Int64) {
            self.device = device
            self.availableBytes = availableBytes
        }

        /// The volume holding `path` (nil when it cannot be read).
        public static func of(_ path: String) -> Volume? {
            var fs = statvfs()
            var st = stat()
            guard statvfs(path, &fs) == 0, stat(path, &st) == 0 else { return nil }
            let (bytes, overflow) = UInt64(fs.f_bavail).multipliedReportingOverflow(by: UInt64(fs.f_frsize))
            return Volume(device: UInt64(st.st_dev), availableBytes: overflow || bytes > UInt64(Int64.max) ? Int64.max : Int64(bytes))
        }
    }

    /// The directory SQLite's unix VFS puts temporary files in: `SQLITE_TMPDIR`,
    /// else `TMPDIR`, else the first writable of `/var/tmp`, `/usr/tmp`, `/tmp`.
    public static func sqliteTemporaryDirectory(environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        let candidates = [environment["SQLITE_TMPDIR"], environment["TMPDIR"], "/var/tmp", "/usr/tmp", "/tmp"].compactMap { $0 }
        for dir in candidates where !dir.isEmpty {
            var isDirectory: ObjCBool = false
            if FileManager.default.fileExists(atPath: dir, isDirectory: &isDirectory), isDirectory.boolValue, access(dir, W_OK | X_OK) == 0 {
                return dir
            }
        }
        return "."
    }

    /// The free space a compaction needs: the live pages once in the temporary
    /// directory (the copy) and once beside the archive (the WAL it is written back
    /// through), plus a sixteenth of each for SQLite's own pages and the file system.
    public static func bytesNeeded(livePages: Int, pageSize: Int) -> Int64 {
        let live = Int64(livePages) * Int64(pageSize)
        return live + live / 16 + (1 << 20)
    }

    /// Whether the free pages are worth a copy of the archive: at least 1% of its pages,
    /// and at least 64 of them (256 KiB at the archive's page size). Writes leave a few
    /// free pages behind as a matter of course; later writes reuse them.
    public static func isWorthCompacting(pages: Int, freePages: Int) -> Bool {
        freePages >= 64 && freePages * 100 >= pages
    }

    /// The page cache (KiB) of the connection while it copies.
    static let vacuumCacheKiB = 8192

    /// The steps of a compaction, for a progress line.
    public enum Step: Sendable, Equatable {
        case checkingBefore, copying(liveBytes: Int), checkingAfter
    }

    /// Compacts `archive` (opened for writing: its lock keeps other writers out).
    /// `volume` and `temporaryDirectory` are the system's unless a test injects them.
    public static func run(_ archive: Archive, temporaryDirectory: String = sqliteTemporaryDirectory(),
                           volume: (String) -> Volume? = Volume.of, verifyCommand: String = "hp-node verify --full",
                           clock: () -> Double = { Date().timeIntervalSince1970 },
                           step: (Step) -> Void = { _ in }) throws -> Report {
        guard let path = archive.path else { throw ArchiveError(.invalidState, "an in-memory archive has no file to compact") }
        guard archive.isWritable else { throw ArchiveError(.invalidState, "compacting \(path) needs the archive opened for writing") }
        let started = clock()
        let storage = try archive.writer.read(Storage.read)
        let (pageSize, pages, free) = (storage.pageSize, storage.pages, storage.freePages)
        var report = Report(pageSize: pageSize, pagesBefore: pages, freePagesBefore: free, pagesAfter: pages,
                            bytesBefore: pages * pageSize, bytesAfter: pages * pageSize, compacted: false, digestsCompared: 0, seconds: 0, copySeconds: 0)
        guard isWorthCompacting(pages: pages, freePages: free) else {
            report.seconds = clock() - started
            return report
        }
        try checkSpace(path: path, temporaryDirectory: temporaryDirectory, needed: bytesNeeded(livePages: pages - free, pageSize: pageSize), volume: volume)
        step(.checkingBefore)
        let before = try archive.writer.read(Fingerprint.init)
        step(.copying(liveBytes: (pages - free) * pageSize))
        let copyStarted = clock()
        do {
            try archive.writer.writeWithoutTransaction { db in
                // VACUUM's copy takes the connection's cache size: a small one for this
                // sequential copy keeps the process's memory down (measured in docs/benchmarks.md).
                let cacheSize = try Int.fetchOne(db, sql: "PRAGMA cache_size") ?? -8192
                try db.execute(sql: "PRAGMA cache_size = -\(vacuumCacheKiB)")
                defer { try? db.execute(sql: "PRAGMA cache_size = \(cacheSize)") }
                try db.execute(sql: "VACUUM")
            }
        } catch let error as DatabaseError where error.resultCode == .SQLITE_FULL {
            throw ArchiveError(.storage, "the disk filled while compacting \(path) (\((path as NSString).deletingLastPathComponent) or \(temporaryDirectory)); the archive is as it was. Free space and compact again", cause: error)
        } catch {
            throw ArchiveError(.storage, "compacting \(path) failed and left it as it was; check the free disk (\(path)'s directory and \(temporaryDirectory)) and try again", cause: error)
        }
        // The copy is committed. Moving it from the WAL into the file is SQLite's usual
        // checkpoint: when a reader keeps it from completing now, a later one does it.
        do {
            try archive.writer.writeWithoutTransaction { _ = try $0.checkpoint(.truncate) }
        } catch {
            archive.logger.warning("the compacted archive's WAL was not checkpointed yet; a later checkpoint will", metadata: ["error": "\(error)"])
        }
        report.copySeconds = clock() - copyStarted
        Heap.trim()
        step(.checkingAfter)
        let after = try archive.writer.read(Fingerprint.init)
        guard after == before else {
            throw ArchiveError(.storage, "after compacting \(path) its contents differ from before (\(before.difference(to: after))); run `\(verifyCommand)` and restore a backup if it reports a problem")
        }
        report.pagesAfter = try archive.writer.read(Storage.read).pages
        report.bytesAfter = report.pagesAfter * pageSize
        report.compacted = true
        report.digestsCompared = before.digests.count
        report.seconds = clock() - started
        return report
    }

    static func checkSpace(path: String, temporaryDirectory: String, needed: Int64, volume: (String) -> Volume?) throws {
        let directory = (path as NSString).deletingLastPathComponent
        guard let archiveVolume = volume(directory), let tempVolume = volume(temporaryDirectory) else {
            throw ArchiveError(.storage, "cannot read the free disk of \(directory) or \(temporaryDirectory), which compacting needs")
        }
        func mb(_ bytes: Int64) -> String { "\((bytes + (1 << 20) - 1) >> 20) MB" }
        if archiveVolume.device == tempVolume.device {
            guard archiveVolume.availableBytes >= needed * 2 else {
                throw ArchiveError(.storage, "compacting needs about \(mb(needed * 2)) free on the disk of \(directory) (a temporary copy in \(temporaryDirectory) and the write-ahead log beside the archive); it has \(mb(archiveVolume.availableBytes)). Free some space, or set SQLITE_TMPDIR to a directory on another disk with \(mb(needed)) free")
            }
        } else {
            guard archiveVolume.availableBytes >= needed else {
                throw ArchiveError(.storage, "compacting needs about \(mb(needed)) free in \(directory) for the write-ahead log; it has \(mb(archiveVolume.availableBytes)). Free some space there")
            }
            guard tempVolume.availableBytes >= needed else {
                throw ArchiveError(.storage, "compacting needs about \(mb(needed)) free in \(temporaryDirectory) for a temporary copy; it has \(mb(tempVolume.availableBytes)). Free some space, or set SQLITE_TMPDIR to a directory with room")
            }
        }
    }

    /// What must not change: every table's row count, and the chain-state digest of
    /// each device chain's latest observation.
    struct Fingerprint: Equatable {
        var rowCounts: [String: Int]
        var digests: [Int64: ChainStateDigest.Result]

        init(_ db: Database) throws {
            rowCounts = [:]
            for table in try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name") {
                rowCounts[table] = try Int.fetchOne(db, sql: "SELECT count(*) FROM \(table.quotedDatabaseIdentifier)") ?? 0
            }
            digests = [:]
            for obs in try Int64.fetchAll(db, sql: "SELECT max(id) FROM observations GROUP BY device_chain_id") {
                digests[obs] = try ChainStateDigest.compute(db, observationID: obs)
            }
        }

        /// Names what differs, without values.
        func difference(to other: Fingerprint) -> String {
            let tables = Set(rowCounts.keys).union(other.rowCounts.keys).filter { rowCounts[$0] != other.rowCounts[$0] }.sorted()
            let observations = Set(digests.keys).union(other.digests.keys).filter { digests[$0] != other.digests[$0] }.sorted()
            var parts: [String] = []
            if !tables.isEmpty { parts.append("row counts of \(tables.joined(separator: ", "))") }
            if !observations.isEmpty { parts.append("chain-state digests of observations \(observations.map(String.init).joined(separator: ", "))") }
            return parts.joined(separator: "; ")
        }
    }
}
