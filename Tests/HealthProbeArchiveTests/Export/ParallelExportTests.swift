import Foundation
import GRDB
import Synchronization
import Testing
@testable import HealthProbeArchive
import HealthProbeTestSupport

@Suite("Record exports on two readers")
struct ParallelExportTests {
    /// Small batches, so several types have several.
    static let batch = 16

    @Test("both readers see the state of the moment they started, not a write committed while they run")
    func sameSnapshot() throws {
        let dir = TempDir()
        let pool = try rawPool(dir.file("a.sqlite"))
        try pool.write { db in
            try db.execute(sql: "CREATE TABLE t(x INTEGER); INSERT INTO t VALUES (1)")
        }
        let helperSaw = Mutex<Int?>(nil)
        let committed = DispatchSemaphore(value: 0)
        let mainSaw = try pool.readWithHelper({ db -> Int in
            let before = try Int.fetchOne(db, sql: "SELECT count(*) FROM t")!
            // Committed after both read transactions began: neither may see it.
            try pool.write { try $0.execute(sql: "INSERT INTO t VALUES (2)") }
            committed.signal()
            #expect(try Int.fetchOne(db, sql: "SELECT count(*) FROM t") == before)
            return before
        }, helper: { db in
            committed.wait()
            helperSaw.withLock { $0 = try? Int.fetchOne(db, sql: "SELECT count(*) FROM t") }
        })
        #expect(mainSaw == 1)
        #expect(helperSaw.withLock { $0 } == 1)
        #expect(try pool.read { try Int.fetchOne($0, sql: "SELECT count(*) FROM t") } == 2)
    }

    @Test("a pool with a single reader: the main body runs alone, the helper only after it, nothing waits forever")
    func singleReader() throws {
        let dir = TempDir()
        ProcessSettings.apply()
        var config = Configuration()
        config.maximumReaderCount = 1
        let pool = try DatabasePool(path: dir.file("b.sqlite"), configuration: config)
        try pool.write { try $0.execute(sql: "CREATE TABLE t(x INTEGER); INSERT INTO t VALUES (1)") }
        let mainDone = Atomic<Bool>(false)
        let helperSawMainDone = Mutex<Bool?>(nil)
        let n = try pool.readWithHelper({ db -> Int in
            defer { mainDone.store(true, ordering: .sequentiallyConsistent) }
            return try Int.fetchOne(db, sql: "SELECT count(*) FROM t")!
        }, helper: { _ in
            helperSawMainDone.withLock { $0 = mainDone.load(ordering: .sequentiallyConsistent) }
        })
        #expect(n == 1)
        #expect(helperSawMainDone.withLock { $0 } == true)
    }

    @Test("JSON and CSV records read on two connections hash exactly as read on one")
    func sameItems() throws {
        let t = TempHome()
        try t.simulate(seed: 5, days: [3, 1])
        let node = try t.open()
        // Several types of more than one batch each, so types and batches interleave.
        let big = try node.archive.writer.read { db in
            try Int.fetchOne(db, sql: "SELECT count(*) FROM (SELECT sample_type_id FROM samples GROUP BY 1 HAVING count(*) > ?)",
                             arguments: [Self.batch])!
        }
        #expect(big >= 2)
        let dir = TempDir()
        for kind in [ExportKind.observationRecordsJSON, .observationRecordsCSV] {
            for at in [1, 2] as [Int64] {
                var r = ExportRequest(kind: kind)
                r.at = at
                let two = try Exporter.reproduce(node: node, request: r, scratch: dir.file("two"), parallel: true, batchSize: Self.batch)
                let one = try Exporter.reproduce(node: node, request: r, scratch: dir.file("one"), parallel: false, batchSize: Self.batch)
                let usual = try Exporter.reproduce(node: node, request: r, scratch: dir.file("usual"))
                #expect(two == one && one == usual, "\(kind) at \(at)")
            }
        }
    }

    @Test("cancelled while the second reader works: it stops too, no file is left, the archive is unchanged")
    func cancelMidway() throws {
        let t = TempHome()
        try t.simulate(seed: 5, days: [3])
        let node = try t.open()
        let dir = TempDir()
        let polls = Atomic<Int>(0)
        let path = dir.file("c.json")
        #expect(throws: ArchiveError.self) {
            try Exporter.run(node: node, request: ExportRequest(kind: .observationRecordsJSON), out: path,
                             isCancelled: { polls.add(1, ordering: .relaxed).newValue > 4 })
        }
        #expect(polls.load(ordering: .relaxed) > 4)
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path).isEmpty)
        try node.archive.writer.read { db throws in
            #expect(try String.fetchOne(db, sql: "SELECT status FROM export_manifests ORDER BY id DESC LIMIT 1") == "cancelled")
        }
        // The archive still exports in full afterwards.
        let r = try Exporter.run(node: node, request: ExportRequest(kind: .observationRecordsJSON), out: path)
        #expect(try ExportVerifier.verify(path: r.path).ok)
    }
}
