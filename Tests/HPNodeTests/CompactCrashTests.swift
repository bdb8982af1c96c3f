import Foundation
import GRDB
import Testing
import HealthProbeTestSupport
@testable import HealthProbeArchive

/// `hp-node compact` killed while it writes the copy back: the archive is as it was.
@Suite("Compaction crash safety", .blocksOnTools)
struct CompactCrashTests {
    @Test("SIGKILL while compact writes the copy back through the WAL: the archive keeps its pages and answers, and a second compact completes")
    func killMidCopy() throws {
        let t = TempHome()
        let path = t.home.archivePath
        do {
            let node = try t.open()
            try capture(node, samples: (0..<60_000).map { hr($0, value: Double(50 + $0 % 90)) })
            // Free pages, as a migration that rebuilds a table leaves them.
            try node.archive.writer.write { db in
                try db.execute(sql: "CREATE TABLE scratch(b BLOB)")
                for _ in 0..<1_500 { try db.execute(sql: "INSERT INTO scratch VALUES (randomblob(4000))") }
            }
            try node.archive.writer.write { db in try db.execute(sql: "DROP TABLE scratch") }
            try node.archive.writer.writeWithoutTransaction { _ = try $0.checkpoint(.truncate) }
        }
        func storage() throws -> ArchiveCompaction.Storage { try rawQueue(path).read(ArchiveCompaction.Storage.read) }
        func digest() throws -> String {
            let r = try hpNode(["--home", t.root, "digest", "--json"])
            return try #require((try JSONSerialization.jsonObject(with: Data(r.1.utf8)) as? [String: Any])?["digest"] as? String, "\(r.2)")
        }
        let before = try storage()
        #expect(before.worthCompacting)
        let digestBefore = try digest()

        let compact = try launchTool("hp-node", ["--home", t.root, "compact"])
        // The copy is written back through the WAL and committed at its end: kill it
        // once the WAL holds a few MB of it.
        var walBytes = 0
        let deadline = Date().addingTimeInterval(60)
        while compact.isRunning && Date() < deadline {
            walBytes = ((try? FileManager.default.attributesOfItem(atPath: path + "-wal"))?[.size] as? Int) ?? 0
            if walBytes > 4 << 20 { break }
            usleep(500)
        }
        kill(compact.processIdentifier, SIGKILL)
        compact.waitUntilExit()
        #expect(walBytes > 4 << 20 && compact.terminationReason == .uncaughtSignal, "killed mid-copy (WAL \(walBytes) bytes)")

        // As it was: the same pages, the same free pages, the same digest, verified.
        #expect(try storage() == before)
        #expect(try digest() == digestBefore)
        let verify = try hpNode(["--home", t.root, "verify", "--json"])
        #expect(verify.0 == 0, "\(verify.1) \(verify.2)")

        let again = try hpNode(["--home", t.root, "compact", "--json"])
        #expect(again.0 == 0, "\(again.2)")
        let after = try storage()
        #expect(after.pages < before.pages && !after.worthCompacting)
        #expect(try digest() == digestBefore)
    }
}
