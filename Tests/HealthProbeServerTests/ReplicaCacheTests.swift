import Foundation
import GRDB
import NIOConcurrencyHelpers
import Testing
@testable import HealthProbeArchive
import HealthProbeCanonical
@testable import HealthProbeServer
import HealthProbeProtocol
import HealthProbeNode
import HealthProbeTestSupport

@Suite("Replicas the server keeps open")
struct ReplicaCacheTests {
    static let chains = (1...3).map { String(repeating: String($0), count: 64) }

    /// A new server data directory; it lasts as long as the returned `TempDir`.
    static func newStore() throws -> (TempDir, ServerStore) {
        let dir = TempDir()
        let store = ServerStore(root: dir.path)
        try store.create()
        return (dir, store)
    }

    /// A server store with one replica kept open by a `ReplicaCache`.
    struct KeptReplica {
        let dir = TempDir()
        let cache = ReplicaCache()
        let chain = ReplicaCacheTests.chains[0]
        let replica: Archive
        let path: String

        init() throws {
            let store = ServerStore(root: dir.path)
            try store.create()
            let (cache, chain) = (self.cache, self.chain)
            replica = try cache.replica(chain) { try store.openReplica(chain) }
            path = store.replicaPath(chain)
        }

        /// The database file's size (without its WAL).
        func databaseSize() throws -> Int { (try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0 }

        /// The WAL file's size.
        func walSize() throws -> Int { (try FileManager.default.attributesOfItem(atPath: path + "-wal")[.size] as? Int) ?? 0 }

        /// Commits `count` rows of about 250 bytes in one transaction (a WAL of `count` / 4 KB or so).
        func writeLargeTransaction(_ count: Int) throws {
            try replica.writer.write { db in
                for i in 0..<count {
                    try db.execute(sql: "INSERT INTO sample_types(type_identifier) VALUES (?)", arguments: ["HKQuantityTypeIdentifierSynthetic\(i)-" + String(repeating: "x", count: 200)])
                }
            }
        }

        /// Commits 3,000 rows (about 400 KB) to the replica.
        func writeRows() throws {
            try replica.writer.write { db in
                for i in 0..<3000 {
                    try db.execute(sql: "INSERT INTO sample_types(type_identifier) VALUES (?)", arguments: ["HKQuantityTypeIdentifierSynthetic\(i)-" + String(repeating: "x", count: 100)])
                }
            }
        }
    }

    @Test("a replica commits with synchronous = FULL: what is acknowledged is on disk")
    func replicasAreSynchronousFull() throws {
        let (dir, store) = try Self.newStore()
        let replica = try store.openReplica(Self.chains[0])
        let level = try replica.writer.read { try Int.fetchOne($0, sql: "PRAGMA synchronous") }
        #expect(level == 2)
        // A node's own archive keeps NORMAL.
        let node = try Archive.open(path: dir.file("node.sqlite"))
        #expect(try node.writer.read { try Int.fetchOne($0, sql: "PRAGMA synchronous") } == 1)
    }

    @Test("a replica applies without SQLite's foreign-key checks: a reference the replica lacks is refused by the applier, nothing stored; applied replicas pass foreign_key_check")
    func referencesResolvedByTheApplier() throws {
        let (dir, store) = try Self.newStore()
        let t = TempHome()
        try simulate(t, days: 1)
        let node = try t.open()
        let path = dir.file("bundle.jsonl")
        let written = try node.archive.writer.read { db in try BundleFile.write(db, observationID: 1, previousManifestHash: nil, to: path) }
        // The same bundle without its sample items, hashed again: its versions, events and ranges name samples no one sent.
        let lines = try FileLines(path: path).map { $0 }
        let header = try BundleVerifier.parseHeader({ if case .object(let o) = try JSONParser.parse(lines[0]) { return o }; return [:] }(), line: 1)
        var manifest = try ManifestHasher(header: header)
        var items: [[UInt8]] = []
        for line in lines.dropFirst().dropLast() {
            let kind = try JSONParser.flat(line).string("kind")!
            if kind == "sample" { continue }
            items.append(line)
            manifest.add(itemHash: ArchiveHasher.sha256Digest(.item, line), kind: kind)
        }
        let trailer = try CanonicalJSON.encode(manifest.trailer.json)
        let hash = try manifest.finish()
        let broken = dir.file("broken.jsonl")
        try Data(([lines[0]] + items + [trailer]).map { $0 + [0x0A] }.joined()).write(to: URL(fileURLWithPath: broken))
        #expect { try store.apply(file: broken, manifestHash: hash, now: 1_750_000_000) } throws: { ($0 as? BundleApplier.ApplyError)?.code == .unresolved }
        let replica = try store.openReplica(node.deviceChainHash)
        #expect(try replica.writer.read { try Int.fetchOne($0, sql: "PRAGMA foreign_keys") } == 0)
        #expect(try replica.writer.read { try Int.fetchOne($0, sql: "SELECT (SELECT count(*) FROM bundle_log) + (SELECT count(*) FROM sample_versions) + (SELECT count(*) FROM observations)") } == 0)
        // The real bundle applies, and every reference in the replica resolves.
        _ = try store.apply(file: path, manifestHash: written.manifestHash, now: 1_750_000_000) { _ in replica }
        #expect(try replica.writer.read { try Int.fetchOne($0, sql: "SELECT count(*) FROM sample_versions") }! > 0)
        #expect(try replica.writer.read { try Row.fetchAll($0, sql: "PRAGMA foreign_key_check") }.isEmpty)
    }

    @Test("a new chain's replica is a copy of the migrated template: latest schema, its own creation time; a missing template is made again")
    func newReplicasFromTheTemplate() throws {
        let (dir, store) = try Self.newStore()
        let before = Date().timeIntervalSince1970 - 1
        let first = try store.openReplica(Self.chains[0])
        #expect(FileManager.default.fileExists(atPath: store.replicaTemplatePath))
        #expect(try first.schemaVersion() == ArchiveMigrations.latestVersion)
        let created = try first.writer.read { try String.fetchOne($0, sql: "SELECT value FROM archive_metadata WHERE key = 'created_at'") }
        #expect((created.flatMap(CanonicalDate.parse) ?? 0) >= before, "created_at is the replica's, not the template's")
        #expect(try first.writer.read { try String.fetchOne($0, sql: "PRAGMA journal_mode") } == "wal")
        // The copy is a whole archive: a bundle-log row and the integrity check work on it.
        #expect(try first.writer.read { try String.fetchOne($0, sql: "PRAGMA integrity_check") } == "ok")
        // Nothing of the first chain leaks into the next one's copy.
        try first.writer.write { try $0.execute(sql: "INSERT INTO sample_types(type_identifier) VALUES ('HKQuantityTypeIdentifierHeartRate')") }
        try FileManager.default.removeItem(atPath: store.replicaTemplatePath)
        let second = try store.openReplica(Self.chains[1])
        #expect(FileManager.default.fileExists(atPath: store.replicaTemplatePath), "made again when missing")
        #expect(try second.writer.read { try Int.fetchOne($0, sql: "SELECT count(*) FROM sample_types") } == 0)
        #expect(try second.schemaVersion() == ArchiveMigrations.latestVersion)
        // No staging files are left behind.
        let leftovers = try FileManager.default.subpathsOfDirectory(atPath: dir.path).filter { $0.hasSuffix(".new") || $0.contains(".sqlite.") && !$0.hasSuffix("-wal") && !$0.hasSuffix("-shm") && !$0.hasSuffix(".lock") }
        #expect(leftovers.isEmpty, "\(leftovers)")
    }

    @Test("the server makes the template before it listens: no bundle waits for it")
    func templateBeforeListening() async throws {
        let data = TempDir()
        let template = ServerStore(root: data.path).replicaTemplatePath
        #expect(!FileManager.default.fileExists(atPath: template))
        try await withServer(data) { _ in
            #expect(FileManager.default.fileExists(atPath: template))
            let chains = try ServerStore(root: data.path).chains()
            #expect(chains.isEmpty, "no chain yet")
        }
    }

    @Test("a damaged template is dropped: the new replica is migrated from scratch and the next one gets a good template")
    func damagedTemplate() throws {
        let (dir, store) = try Self.newStore()
        defer { withExtendedLifetime(dir) {} }
        _ = try store.openReplica(Self.chains[0])
        try Data(repeating: 0x41, count: 8192).write(to: URL(fileURLWithPath: store.replicaTemplatePath))
        let replica = try store.openReplica(Self.chains[1])
        #expect(try replica.schemaVersion() == ArchiveMigrations.latestVersion)
        #expect(try replica.writer.read { try String.fetchOne($0, sql: "PRAGMA integrity_check") } == "ok")
        #expect(!FileManager.default.fileExists(atPath: store.replicaTemplatePath), "the damaged template was removed")
        let next = try store.openReplica(Self.chains[2])
        #expect(try next.schemaVersion() == ArchiveMigrations.latestVersion)
        #expect(FileManager.default.fileExists(atPath: store.replicaTemplatePath), "made again")
    }

    @Test("at most `capacity` replicas stay open; the least recently used is closed (its lock released)")
    func evictsLeastRecentlyUsed() throws {
        let (dir, store) = try Self.newStore()
        defer { withExtendedLifetime(dir) {} }
        let cache = ReplicaCache(capacity: 2)
        var opened = 0
        func get(_ chain: String) throws -> Archive { try cache.replica(chain) { opened += 1; return try store.openReplica(chain) } }
        _ = try get(Self.chains[0])
        _ = try get(Self.chains[1])
        _ = try get(Self.chains[0])  // kept: not opened again, and now the most recent
        #expect(opened == 2)
        _ = try get(Self.chains[2])  // closes chains[1]
        #expect(opened == 3)
        // A kept replica still holds its writer lock; the evicted one does not.
        #expect(throws: ArchiveError.self) { _ = try store.openReplica(Self.chains[0]) }
        #expect(throws: ArchiveError.self) { _ = try store.openReplica(Self.chains[2]) }
        _ = try store.openReplica(Self.chains[1])
        cache.evict(Self.chains[0])
        _ = try store.openReplica(Self.chains[0])
    }

    @Test("a kept replica's commits stay in the WAL until the checkpoint after the acknowledgement")
    func checkpointAfterAcknowledgement() throws {
        let k = try KeptReplica()
        let (cache, chain, replica) = (k.cache, k.chain, k.replica)
        let size = k.databaseSize
        let before = try size()
        try k.writeRows()
        #expect(try size() == before, "no automatic checkpoint inside the commit")
        try cache.checkpoint(chain)
        #expect(try size() > before + 300_000, "the checkpoint copied the committed pages into the database file")
        cache.releaseMemory(chain)
        #expect(try replica.writer.read { try Int.fetchOne($0, sql: "SELECT count(*) FROM sample_types") } ?? 0 >= 3000)
    }

    #if os(Linux)
    @Test("the checkpoint connection is opened once, kept with its replica, and closed when the replica is evicted")
    func checkpointConnectionIsKept() throws {
        let (dir, store) = try Self.newStore()
        defer { withExtendedLifetime(dir) {} }
        let cache = ReplicaCache()
        let chain = Self.chains[0], path = store.replicaPath(chain)
        // Only the cache holds the replica.
        func write(_ name: String) throws {
            try cache.replica(chain) { try store.openReplica(chain) }.writer.write {
                try $0.execute(sql: "INSERT INTO sample_types(type_identifier) VALUES (?)", arguments: [name])
            }
        }
        // Open descriptors of this process on the replica's database file and its WAL.
        func descriptors() throws -> Int {
            try FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").filter {
                let target = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\($0)")) ?? ""
                return target == path || target == path + "-wal"
            }.count
        }
        try write("first")
        let replicaOnly = try descriptors()
        #expect(replicaOnly > 0)
        try cache.checkpoint(chain)
        let withCheckpointer = try descriptors()
        #expect(withCheckpointer > replicaOnly)
        for i in 0..<3 {
            try write("again\(i)")
            try cache.checkpoint(chain)
        }
        #expect(try descriptors() == withCheckpointer, "not opened again for each checkpoint")
        _ = try cache.cutWAL(chain, keepWALBytes: 0, stepBytes: 1 << 20)
        #expect(try descriptors() == withCheckpointer, "cutting the WAL uses the same connection")
        cache.evict(chain)
        #expect(try descriptors() == 0, "closed with the replica")
        // Not kept: nothing to checkpoint, nothing opened.
        try cache.checkpoint(chain)
        #expect(try descriptors() == 0)
    }
    #endif

    @Test("while other applies run, checkpoints wait (up to a chain's deferred bytes); the first call with none running checkpoints them all")
    func checkpointsWaitWhileApplying() async throws {
        let (dir, store) = try Self.newStore()
        // One bundle of each of three nodes.
        var bundles: [(chain: String, path: String, hash: String)] = []
        for seed in 1...3 as ClosedRange<UInt64> {
            let t = TempHome()
            try simulate(t, days: 1, seed: seed)
            let node = try t.open()
            let path = dir.file("bundle\(seed).jsonl")
            let written = try await node.archive.writer.read { db in
                try BundleFile.write(db, observationID: try Int64.fetchOne(db, sql: "SELECT max(id) FROM observations")!, previousManifestHash: nil, to: path)
            }
            bundles.append((node.deviceChainHash, path, written.manifestHash))
        }
        let queue = ApplyQueue(store: store, keptReplicas: 8, deferredCheckpointBytes: 1_000_000)
        // The replica file's bytes (a checkpoint copies pages into it; its size may not change when
        // the pages land on free ones the migrations left).
        let size = { (chain: String) in try Data(contentsOf: URL(fileURLWithPath: store.replicaPath(chain))) }
        // `bytes`: the size the bundle counts towards its chain's deferred bytes.
        func apply(_ b: (chain: String, path: String, hash: String), bytes: Int) async throws {
            let outcome = try await queue.apply(chain: b.chain, path: b.path, manifestHash: b.hash, bytes: bytes, at: 1_750_000_000)
            #expect(outcome == .applied(observationID: 1, sequence: 1))
        }
        // Another apply is in flight: the first two chains' checkpoints wait.
        await queue.began()
        try await apply(bundles[0], bytes: 999_999)
        try await apply(bundles[1], bytes: 1)
        let before = try [size(bundles[0].chain), size(bundles[1].chain)]
        await queue.checkpointApplied()
        #expect(await queue.uncheckedChains() == [bundles[0].chain, bundles[1].chain])
        #expect(try [size(bundles[0].chain), size(bundles[1].chain)] == before, "nothing copied yet")
        // A chain whose uncopied bundles reach the deferred bytes is checkpointed even so.
        try await apply(bundles[2], bytes: 1_000_000)
        let third = try size(bundles[2].chain)
        await queue.checkpointApplied()
        #expect(await queue.uncheckedChains() == [bundles[0].chain, bundles[1].chain])
        #expect(try size(bundles[2].chain) != third)
        // CHAIN_STATUS answers from what was applied, as the replica itself does; without a kept replica, from the file.
        for b in bundles {
            let remembered = try queue.status(b.chain), stored = try store.status(b.chain)
            #expect(remembered.0 == 1 && remembered.1 == b.hash)
            #expect(stored.0 == remembered.0 && stored.1 == remembered.1)
        }
        #expect(try queue.status(String(repeating: "e", count: 64)).0 == 0)
        let replicas = await queue.replicas
        replicas.evict(bundles[0].chain)
        #expect(replicas.lastApplied(bundles[0].chain) == nil)
        #expect(try queue.status(bundles[0].chain).1 == bundles[0].hash, "read from the replica")
        // None in flight: every waiting chain is checkpointed, and the replicas stay complete.
        await queue.ended()
        await queue.checkpointApplied()
        #expect(await queue.uncheckedChains().isEmpty)
        #expect(try size(bundles[0].chain) != before[0] && size(bundles[1].chain) != before[1])
        for b in bundles {
            let replica = try Archive.open(path: store.replicaPath(b.chain), mode: .readOnly)
            #expect(try await replica.writer.read { try Int.fetchOne($0, sql: "SELECT count(*) FROM bundle_log") } == 1)
        }
    }

    @Test("a replica the server opens has the apply path's TEMP tables already: no apply empties its statement cache making them")
    func replicasOpenPrepared() throws {
        let (dir, store) = try Self.newStore()
        defer { withExtendedLifetime(dir) {} }
        let replica = try store.openReplica(Self.chains[0])
        let temps = try replica.writer.write { db in try String.fetchSet(db, sql: "SELECT name FROM temp.sqlite_master WHERE type = 'table'") }
        #expect(temps == ["hp_touched", "hp_days", "hp_touched_samples"])
    }

    @Test("applies run on the queue's own threads, as many at once as it has; once shut down an apply is refused and stores nothing")
    func applyThreads() async throws {
        let (dir, store) = try Self.newStore()
        let queue = ApplyQueue(store: store, keptReplicas: 8, threads: 3)
        // Three blocking jobs meet only if three threads run them at once (each gives up after 10 s).
        let met = NIOLockedValueBox(0)
        let results = try await withThrowingTaskGroup(of: Bool.self) { group in
            for _ in 0..<3 {
                group.addTask {
                    try await queue.pool.runIfActive {
                        met.withLockedValue { $0 += 1 }
                        let deadline = Date().addingTimeInterval(10)
                        while met.withLockedValue({ $0 }) < 3 && Date() < deadline { usleep(1_000) }
                        return met.withLockedValue { $0 } == 3
                    }
                }
            }
            return try await group.reduce(into: [Bool]()) { $0.append($1) }
        }
        #expect(results == [true, true, true])
        // Shut down (twice is harmless): a bundle is refused, and neither its replica nor its bundle file exists.
        let t = TempHome()
        try simulate(t, days: 1, seed: 9)
        let node = try t.open()
        let path = dir.file("bundle.jsonl")
        let written = try await node.archive.writer.read { db in
            try BundleFile.write(db, observationID: try Int64.fetchOne(db, sql: "SELECT max(id) FROM observations")!, previousManifestHash: nil, to: path)
        }
        await queue.shutdown()
        await queue.shutdown()
        await #expect(throws: (any Error).self) {
            _ = try await queue.apply(chain: node.deviceChainHash, path: path, manifestHash: written.manifestHash, bytes: 1, at: 1_750_000_000)
        }
        #expect(!FileManager.default.fileExists(atPath: store.replicaPath(node.deviceChainHash)))
        #expect(!FileManager.default.fileExists(atPath: store.bundlePath(node.deviceChainHash, sequence: 1)))
        #expect(try store.status(node.deviceChainHash).0 == 0)
    }

    @Test("a checkpoint of a large WAL paces the database file's writeback; a small one does not; the replica is complete either way")
    func largeCheckpointsArePaced() throws {
        let k = try KeptReplica()
        let (cache, chain, replica) = (k.cache, k.chain, k.replica)
        try k.writeLargeTransaction(5_000)
        #expect(try k.walSize() > 1 << 20)
        try cache.checkpoint(chain, pacedFromWALBytes: Int.max)
        #expect(cache.pacedCheckpoints == 0, "below the bound: not paced")
        try replica.writer.write { db in try db.execute(sql: "INSERT INTO sample_types(type_identifier) VALUES ('more')") }
        try cache.checkpoint(chain, pacedFromWALBytes: 1 << 20)
        #expect(cache.pacedCheckpoints == 1)
        #expect(try replica.writer.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM sample_types WHERE type_identifier LIKE 'HKQuantityTypeIdentifierSynthetic%' OR type_identifier = 'more'") } == 5_001)
        #expect(try replica.writer.read { db in try String.fetchOne(db, sql: "PRAGMA integrity_check") } == "ok")
    }

    @Test("a grown WAL is cut back by the checkpoint, a step at a time, never by the replica's own commit")
    func growthIsCutBackByTheCheckpoint() throws {
        let k = try KeptReplica()
        let (cache, chain, replica) = (k.cache, k.chain, k.replica)
        let wal = { try k.walSize() }
        // One large transaction: a WAL of several MB.
        try k.writeLargeTransaction(20_000)
        let grown = try wal()
        #expect(grown > 4 << 20)
        // Copied: the replica's next commit restarts the WAL without cutting it.
        try cache.checkpoint(chain)
        try replica.writer.write { try $0.execute(sql: "INSERT INTO sample_types(type_identifier) VALUES ('after')") }
        #expect(try wal() == grown, "the apply's commit does not pay for freeing the file")
        // Cut back in 1 MiB steps, each smaller than the one before.
        var steps = 0, last = grown
        while try cache.cutWAL(chain, keepWALBytes: 1 << 20, stepBytes: 1 << 20) {
            steps += 1
            #expect(try wal() <= last - (1 << 20))
            last = try wal()
            if steps > 100 { break }
        }
        #expect(steps >= 2)
        #expect(try wal() <= 1 << 20)
        #expect(try cache.cutWAL(chain, keepWALBytes: 1 << 20) == false, "nothing left to cut")
        #expect(try replica.writer.read { try Int.fetchOne($0, sql: "SELECT count(*) FROM sample_types") } == 20_001)
        #expect(try replica.writer.read { try String.fetchOne($0, sql: "SELECT value FROM archive_metadata WHERE key = 'archive_format'") } == ArchiveMigrations.archiveFormat)
    }

    @Test("the checkpoint does not wait for the replica's writer: the chain's next apply can run meanwhile")
    func checkpointBesideTheWriter() throws {
        let k = try KeptReplica()
        let (cache, chain, replica) = (k.cache, k.chain, k.replica)
        let size = k.databaseSize
        try k.writeRows()
        let before = try size()
        // Another write transaction holds the replica's writer, uncommitted.
        let acquired = DispatchSemaphore(value: 0), release = DispatchSemaphore(value: 0), finished = DispatchSemaphore(value: 0)
        let writer = replica.writer
        DispatchQueue.global().async {
            try? writer.write { db in
                try db.execute(sql: "INSERT INTO sample_types(type_identifier) VALUES ('held')")
                acquired.signal()
                release.wait()
            }
            finished.signal()
        }
        acquired.wait()
        let checkpointed = DispatchSemaphore(value: 0)
        let result = LockedBox<Result<Void, any Error>?>(nil)
        DispatchQueue.global().async {
            result.set(Result { try cache.checkpoint(chain) })
            checkpointed.signal()
        }
        let inTime = checkpointed.wait(timeout: .now() + 20) == .success
        release.signal()
        finished.wait()
        if !inTime { checkpointed.wait() }
        #expect(inTime, "the checkpoint waited for the writer")
        #expect(throws: Never.self) { try result.get()?.get() }
        #expect(try size() > before + 300_000, "the committed pages were copied while the writer was held")
    }
}

/// A value set on one thread and read on another after a semaphore (tests).
final class LockedBox<T>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: T
    init(_ v: T) { value = v }
    func set(_ v: T) { lock.withLock { value = v } }
    func get() -> T { lock.withLock { value } }
}
