import Foundation
import GRDB
import Testing
@testable import HealthProbeArchive
import HealthProbeTestSupport

/// Checkpoints beside the writer (a node's restore): the writer's commits leave their
/// pages in the WAL, a thread of its own copies them into the file, and the writer's
/// own setting comes back after.
@Suite("Background checkpoints")
struct BackgroundCheckpointsTests {
    func autocheckpoint(_ archive: Archive) throws -> Int? {
        try archive.writer.writeWithoutTransaction { db in try Int.fetchOne(db, sql: "PRAGMA wal_autocheckpoint") }
    }

    func fileSize(_ path: String) throws -> Int {
        try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int ?? 0
    }

    @Test("a commit's pages stay in the WAL (the writer does not checkpoint meanwhile) until the checkpoint after it copies them into the file; finish cuts the WAL file back and gives the writer its setting back; an archive in memory has none")
    func checkpointsBesideTheWriter() throws {
        let dir = TempDir()
        let path = dir.file("archive.sqlite")
        let archive = try Archive.open(path: path)
        #expect(try autocheckpoint(archive) == 1000)
        let checkpoints = try #require(try BackgroundCheckpoints.start(archive))
        #expect(try autocheckpoint(archive) == 0)
        let before = try fileSize(path)
        // About 8 MB: 8 times the writer's usual checkpoint threshold (1,000 pages).
        try archive.writer.write { db in
            let value = String(repeating: "x", count: 4_000)
            for i in 0..<2_000 { try db.execute(sql: "INSERT INTO archive_metadata(key, value) VALUES (?, ?)", arguments: ["k\(i)", value]) }
        }
        #expect(try fileSize(path) == before, "the commit checkpointed")
        #expect(try fileSize(path + "-wal") > 8_000_000)
        checkpoints.committed(bytes: 8_000_000)
        checkpoints.finish()
        #expect(try fileSize(path) > before + 8_000_000, "the checkpoint did not copy the commit's pages")
        #expect(try fileSize(path + "-wal") == 0, "the WAL file was not cut back")
        #expect(try autocheckpoint(archive) == 1000)
        // Finished, it does nothing more; in memory, there is nothing to checkpoint.
        checkpoints.committed(bytes: 8_000_000)
        checkpoints.beforeNextTransaction()
        checkpoints.finish()
        #expect(try BackgroundCheckpoints.start(try Archive.inMemory()) == nil)
    }

    @Test("after a small commit the next transaction waits for its checkpoint and starts the WAL over: thirty commits of a megabyte leave a WAL file of a few, not thirty")
    func smallCommitsStartTheWALOver() throws {
        let dir = TempDir()
        let path = dir.file("archive.sqlite")
        let archive = try Archive.open(path: path)
        let checkpoints = try #require(try BackgroundCheckpoints.start(archive))
        let value = String(repeating: "y", count: 4_000)
        for round in 0..<30 {
            checkpoints.beforeNextTransaction()
            try archive.writer.write { db in
                for i in 0..<250 { try db.execute(sql: "INSERT INTO archive_metadata(key, value) VALUES (?, ?)", arguments: ["r\(round)-\(i)", value]) }
            }
            checkpoints.committed(bytes: 1_000_000)
        }
        #expect(try fileSize(path + "-wal") < 6_000_000, "the WAL grew by every commit")
        checkpoints.finish()
        #expect(try archive.writer.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM archive_metadata WHERE key LIKE 'r%'") } == 7_500)
    }
}
