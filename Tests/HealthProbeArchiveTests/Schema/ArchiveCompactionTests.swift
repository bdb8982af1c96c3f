import Foundation
import GRDB
import HealthProbeTestSupport
import Testing
@testable import HealthProbeArchive

/// `ArchiveCompaction`: the free pages a migration leaves go back to the disk, and
/// nothing the archive answers changes (digests, bundles, exports, verification).
@Suite("Compacting an archive")
struct ArchiveCompactionTests {
    static func pages(_ path: String) throws -> (pages: Int, free: Int) {
        try DatabaseQueue(path: path).read { db in
            (try Int.fetchOne(db, sql: "PRAGMA page_count")!, try Int.fetchOne(db, sql: "PRAGMA freelist_count")!)
        }
    }

    /// The schema-8 fixture, migrated: its rebuilt tables left free pages.
    static func migratedFixture() throws -> (TempHome, NodeArchive) {
        let t = TempHome()
        try ArchiveFixtureV8.install(into: t)
        return (t, try t.open())
    }

    @Test("after a migration: free pages returned, the file smaller, every answer of the schema-8 build given again")
    func afterMigration() throws {
        let (t, node) = try Self.migratedFixture()
        let dir = TempDir()
        let before = try Self.pages(t.home.archivePath)
        #expect(before.free > 0, "the migrations rebuilt tables")
        var steps: [ArchiveCompaction.Step] = []
        let report = try ArchiveCompaction.run(node.archive, step: { steps.append($0) })
        #expect(report.compacted && report.digestsCompared == 1)
        #expect(steps == [.checkingBefore, .copying(liveBytes: (before.pages - before.free) * 4096), .checkingAfter])
        #expect(report.pagesBefore == before.pages && report.freePagesBefore == before.free)
        let after = try Self.pages(t.home.archivePath)
        #expect(after.free == 0 && after.pages == report.pagesAfter && after.pages < before.pages)
        #expect(report.bytesAfter == after.pages * report.pageSize)
        let attributes = try FileManager.default.attributesOfItem(atPath: t.home.archivePath)
        #expect((attributes[.size] as? Int) == report.bytesAfter, "the file itself shrank")
        #expect((try? FileManager.default.attributesOfItem(atPath: t.home.archivePath + "-wal")[.size] as? Int) ?? 0 == 0, "the WAL is checkpointed")
        // Bundles order range items by rowid: the same manifest hashes show the order survived.
        try ArchiveFixtureV8Tests.expectSameAnswers(node, dir)
        steps = []
        let again = try ArchiveCompaction.run(node.archive, step: { steps.append($0) })
        #expect(steps.isEmpty)
        #expect(!again.compacted && again.freePagesBefore == 0 && again.pagesAfter == after.pages)
    }

    @Test("too little free disk: refused before anything is copied, naming the directory and the space needed")
    func tooLittleSpace() throws {
        let (t, node) = try Self.migratedFixture()
        let before = try Self.pages(t.home.archivePath)
        let needed = ArchiveCompaction.bytesNeeded(livePages: before.pages - before.free, pageSize: 4096)
        let directory = t.home.archiveDirectory
        // One disk with room for one copy only, then two disks where either lacks room.
        let cases: [(String) -> ArchiveCompaction.Volume?] = [
            { _ in .init(device: 1, availableBytes: needed * 2 - 1) },
            { $0 == directory ? .init(device: 1, availableBytes: needed - 1) : .init(device: 2, availableBytes: needed * 4) },
            { $0 == directory ? .init(device: 1, availableBytes: needed * 4) : .init(device: 2, availableBytes: needed - 1) },
            { _ in nil },
        ]
        for (i, volume) in cases.enumerated() {
            do {
                _ = try ArchiveCompaction.run(node.archive, temporaryDirectory: "/elsewhere", volume: volume)
                Issue.record("case \(i) was not refused")
            } catch let e as ArchiveError {
                #expect(e.code == .storage, "case \(i)")
                #expect(e.message.contains(i == 2 ? "/elsewhere" : directory), "case \(i): \(e.message)")
                #expect(i == 3 || e.message.contains(" MB"), "case \(i): \(e.message)")
            }
        }
        #expect(try Self.pages(t.home.archivePath) == before, "nothing was done")
        // Enough on two disks, or twice enough on one: it runs.
        let enough = try ArchiveCompaction.run(node.archive, temporaryDirectory: "/elsewhere",
                                               volume: { _ in .init(device: 1, availableBytes: needed * 2) })
        #expect(enough.compacted)
    }

    @Test("an archive opened read-only, or in memory, is not compacted")
    func needsWriter() throws {
        let (t, node) = try Self.migratedFixture()
        let readOnly = try Archive.open(path: t.home.archivePath, mode: .readOnly)
        #expect(throws: ArchiveError.self) { _ = try ArchiveCompaction.run(readOnly) }
        #expect(throws: ArchiveError.self) { _ = try ArchiveCompaction.run(try Archive.inMemory()) }
        #expect(try Self.pages(t.home.archivePath).free > 0)
        withExtendedLifetime(node) {}
    }

    @Test("what is compared before and after tells a changed table and a changed digest apart, without values")
    func fingerprint() throws {
        let (_, node) = try Self.migratedFixture()
        let before = try node.archive.writer.read(ArchiveCompaction.Fingerprint.init)
        #expect(before.digests.count == 1 && before.rowCounts["samples"] == 2035)
        try node.archive.writer.write { db in
            try db.execute(sql: "INSERT INTO archive_metadata(key, value) VALUES ('compaction-test', 'x')")
            // A range closed at the last observation hides one sample from it.
            let last = try Int64.fetchOne(db, sql: "SELECT max(id) FROM observations")!
            try db.execute(sql: "UPDATE sample_visibility_ranges SET last_observation_id = ? WHERE rowid = (SELECT min(rowid) FROM sample_visibility_ranges WHERE last_observation_id IS NULL)", arguments: [last])
        }
        let after = try node.archive.writer.read(ArchiveCompaction.Fingerprint.init)
        #expect(after != before)
        let text = before.difference(to: after)
        #expect(text.contains("row counts of archive_metadata") && text.contains("chain-state digests of observations"), "\(text)")
        #expect(!text.contains("sample_visibility_ranges"), "its row count did not change")
    }

    @Test("the temporary directory is SQLite's: SQLITE_TMPDIR, else TMPDIR, else the first writable of /var/tmp, /usr/tmp, /tmp")
    func temporaryDirectory() throws {
        let a = TempDir(), b = TempDir()
        #expect(ArchiveCompaction.sqliteTemporaryDirectory(environment: ["SQLITE_TMPDIR": a.path, "TMPDIR": b.path]) == a.path)
        #expect(ArchiveCompaction.sqliteTemporaryDirectory(environment: ["TMPDIR": b.path]) == b.path)
        #expect(ArchiveCompaction.sqliteTemporaryDirectory(environment: ["SQLITE_TMPDIR": a.path + "/missing", "TMPDIR": b.path]) == b.path)
        let fallback = ArchiveCompaction.sqliteTemporaryDirectory(environment: [:])
        #expect(["/var/tmp", "/usr/tmp", "/tmp"].contains(fallback))
    }

    @Test("worth a copy from 1% of the pages free, and 64 pages")
    func threshold() {
        #expect(!ArchiveCompaction.isWorthCompacting(pages: 280, freePages: 1))
        #expect(!ArchiveCompaction.isWorthCompacting(pages: 64, freePages: 7), "a new archive")
        #expect(!ArchiveCompaction.isWorthCompacting(pages: 100, freePages: 63))
        #expect(ArchiveCompaction.isWorthCompacting(pages: 100, freePages: 64))
        #expect(ArchiveCompaction.isWorthCompacting(pages: 6_400, freePages: 64))
        #expect(!ArchiveCompaction.isWorthCompacting(pages: 6_401, freePages: 64))
        #expect(ArchiveCompaction.isWorthCompacting(pages: 141_051, freePages: 40_952))
        #expect(!ArchiveCompaction.isWorthCompacting(pages: 141_051, freePages: 1_410))
    }

    @Test("the space needed: the live pages and a sixteenth, plus a MiB")
    func bytesNeeded() {
        #expect(ArchiveCompaction.bytesNeeded(livePages: 16, pageSize: 4096) == 16 * 4096 + 4096 + (1 << 20))
        #expect(ArchiveCompaction.bytesNeeded(livePages: 0, pageSize: 4096) == 1 << 20)
    }
}
