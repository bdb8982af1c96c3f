import Foundation
import GRDB
import Testing
@testable import HealthProbeServer
import HealthProbeTestSupport

/// Uploads to a real S3-compatible store (SeaweedFS on 127.0.0.1): the queue, an outage and
/// its backlog, damaged objects, snapshot pruning.
@Suite("Bundles off the machine (S3): uploads", .enabled(if: SeaweedS3.available, Comment(rawValue: SeaweedS3.skipReason)), .serialized, .blocksOnTools)
struct OffsiteTests: OffsiteSupport {
    @Test("accepted bundles reach a real S3 store, older ones by backfill; a backlog while it is down waits in the queue across a restart and is drained; the metrics show the queue")
    func uploadOutage() async throws { try await withStore(uploadOutage) }

    func uploadOutage(_ s3: SeaweedS3) async throws {
        let (_, config, objects) = try await freshBucket(s3, prefix: "house/one")

        let data = TempDir(), home = TempDir(), elsewhere = TempDir()
        try config.write(toFile: elsewhere.file("config.json"), atomically: true, encoding: .utf8)
        // A bundle kept before uploads were configured: the backfill queues it.
        let chain = try dataWithOneSync(data: data.path, home: home.path, name: "anna-phone", seed: 5, days: 10)
        try config.write(toFile: data.file("config.json"), atomically: true, encoding: .utf8)
        var server: ServerProcess? = try ServerProcess(data: data.path)
        try await waitFor("the first bundle uploaded") { let q = try queue(data.path); return q.all == 1 && q.pending == 0 }

        // The store goes down: syncs are acknowledged all the same, the bundles wait in the queue.
        s3.stop()
        for _ in 0..<2 {
            #expect(try hpNode(["--home", home.path, "capture", "--simulate", "--seed", "5", "--days", "1"]).0 == 0)
            let started = Date()
            #expect(try hpNode(["--home", home.path, "sync", "--server", "127.0.0.1:\(server!.port)"]).0 == 0)
            #expect(Date().timeIntervalSince(started) < 30, "a sync waited for the object store")
        }
        try await waitFor("a failed upload attempt") { try queue(data.path).failedAttempts > 0 }
        #expect(try queue(data.path).pending == 2)
        // A restart while the backlog waits: the queue is in the registry.
        server!.stop()
        let metricsPort = try #require(try freeLoopbackPorts(1).first)
        server = try ServerProcess(data: data.path, arguments: ["--metrics", "127.0.0.1:\(metricsPort)"])
        #expect(try queue(data.path).pending == 2)
        // A server that starts owes the bucket a registry snapshot; while none can be made, the
        // registry says since when (`backup_failing` reads it).
        try await waitFor("a registry snapshot recorded as due") { try DeviceRegistry(path: data.file("server.sqlite")).offsiteSnapshotDue() != nil }
        try s3.start()
        try await waitFor("the backlog drained") { let q = try queue(data.path); return q.all == 3 && q.pending == 0 }
        let bundleKeys = try await objects.list(prefix: "house/one/chains/")
        #expect(bundleKeys.count == 3)
        // A snapshot after the last upload (the registry written last).
        let before = try await objects.list(prefix: "house/one/snapshots/").filter { $0.contains("/server.sqlite-") }.count
        #expect(try hpNode(["--home", home.path, "capture", "--simulate", "--seed", "5", "--days", "1"]).0 == 0)
        #expect(try hpNode(["--home", home.path, "sync", "--server", "127.0.0.1:\(server!.port)"]).0 == 0)
        try await waitFor("the fourth bundle uploaded") { let q = try queue(data.path); return q.all == 4 && q.pending == 0 }
        try await waitForSnapshots(objects, prefix: "house/one", moreThan: before)
        try await waitFor("no snapshot due once one arrived") { try DeviceRegistry(path: data.file("server.sqlite")).offsiteSnapshotDue() == nil }
        // What an administrator watches: the uploads, the queue, when the last upload and snapshot were.
        try await waitFor("the metrics to show the queue empty") {
            let m = try loopbackHTTPGet(port: metricsPort, path: "/metrics")
            return m.contains(#"hp_server_offsite_uploads_total{result="uploaded"} 3"#) && m.contains("hp_server_offsite_pending 0")
                && m.contains("hp_server_offsite_last_upload_timestamp_seconds ") && m.contains("hp_server_offsite_last_snapshot_timestamp_seconds ")
        }
        // What came by backfill, by the backlog drained after the outage and by the upload after
        // it rebuilds the chain the server holds.
        let restored = elsewhere.path + "/data"
        let r = try hpServer(["restore", "--from", "s3://healthprobe/house/one", "--config", elsewhere.file("config.json"), "--data", restored, "--json"])
        #expect(r.0 == 0, "\(r.2)")
        let original = jsonDigest(try hpServer(["digest", "--data", data.path, "--chain", chain, "--json"]).1)
        let rebuilt = jsonDigest(try hpServer(["digest", "--data", restored, "--chain", chain, "--json"]).1)
        #expect(original != nil && rebuilt == original)
        #expect(try hpServer(["verify", "--data", restored, "--full"]).0 == 0)
        withExtendedLifetime(server) {}
    }

    @Test("an object in the bucket whose bytes are not those its key names is refused by its SHA-256 on restore")
    func damagedObjectRefused() async throws { try await withStore(damagedObject) }

    /// Its own store, never restarted: SeaweedFS was seen to hang on a PUT made after it was
    /// killed and started again (on a new key as on a replaced one), while the server's own
    /// uploads and every read went on; the outage test above puts nothing after its restart.
    func damagedObject(_ s3: SeaweedS3) async throws {
        let (settings, config, objects) = try await freshBucket(s3, prefix: "house/three")
        let data = TempDir(), home = TempDir(), elsewhere = TempDir()
        #expect(try hpServer(["init", "--data", data.path]).0 == 0)
        try config.write(toFile: data.file("config.json"), atomically: true, encoding: .utf8)
        try config.write(toFile: elsewhere.file("config.json"), atomically: true, encoding: .utf8)
        #expect(try hpNode(["--home", home.path, "capture", "--simulate", "--seed", "6", "--days", "3"]).0 == 0)
        let chain = try nodeChain(home.path)
        let server = try ServerProcess(data: data.path)
        try enrollWithCLI(data: data.path, home: home.path, name: "anna-phone", port: server.port)
        #expect(try hpNode(["--home", home.path, "sync"]).0 == 0)
        try await waitFor("the bundle uploaded") { let q = try queue(data.path); return q.all == 1 && q.pending == 0 }
        try await waitForSnapshots(objects, prefix: "house/three", moreThan: 0)
        server.stop()
        // An object at the chain's next sequence, named with a hash its bytes do not have.
        let damaged = TempDir()
        try Data("not a bundle\n".utf8).write(to: URL(fileURLWithPath: damaged.file("b")))
        let kept = try await objects.list(prefix: "house/three/chains/").compactMap { OffsiteKeys.parseBundle(String($0.dropFirst("house/three/".count))) }
        #expect(kept.count == 1 && Set(kept.map(\.chain)) == [chain], "\(kept)")
        let next = objects.key(OffsiteKeys.bundle(chain: chain, sequence: kept.count + 1, sha256: String(repeating: "0", count: 64), gzip: true))
        try await patiently(settings) { try await $0.put(key: next, file: damaged.file("b"), sha256: try FileHash.sha256(damaged.file("b"))) }
        let refused = try hpServer(["restore", "--from", "s3://healthprobe/house/three", "--config", elsewhere.file("config.json"), "--data", elsewhere.path + "/again"])
        #expect(refused.0 != 0 && refused.2.contains("SHA-256"), "\(refused.2)")
        #expect(!FileManager.default.fileExists(atPath: elsewhere.path + "/again"), "a refused restore leaves nothing")
    }

    @Test("registry snapshots in the bucket are pruned to the newest complete ones; an unfinished newer one and every bundle stay")
    func snapshotsPruned() async throws {
        let s3 = try SeaweedS3()
        let settings = store(s3, prefix: "house/two").settings
        let objects = ObjectStore(settings: settings)
        try await createBucket(settings)
        let data = TempDir()
        #expect(try hpServer(["init", "--data", data.path]).0 == 0)
        let store = ServerStore(root: data.path)
        let uploader = OffsiteUploader(store: store, registry: try store.registry(), objects: objects)
        var made: [String] = []
        for i in 0..<4 { made.append(try await uploader.snapshot(now: 1_800_000_000 + Double(i) * 60)) }
        // A newer snapshot still being written: its TLS files are in, its registry not yet.
        let unfinished = objects.key(OffsiteKeys.snapshot(at: 1_800_000_000 + 600)) + "/tls/cert.pem-00"
        try "x".write(toFile: data.file("x"), atomically: true, encoding: .utf8)
        try await objects.put(key: unfinished, file: data.file("x"), sha256: try FileHash.sha256(data.file("x")))
        let bundle = objects.key("bundles/" + String(repeating: "a", count: 64) + "/1-00.jsonl.gz")
        try await objects.put(key: bundle, file: data.file("x"), sha256: try FileHash.sha256(data.file("x")))

        #expect(try await uploader.pruneSnapshots(keep: 2) == 2)
        let left = try await objects.list(prefix: "house/two/")
        let snapshots = Set(left.filter { $0.contains("/server.sqlite-") }.map { String($0.split(separator: "/").dropLast().joined(separator: "/")) })
        #expect(snapshots == Set(made.suffix(2)), "\(left)")
        #expect(left.contains(unfinished) && left.contains(bundle))
        #expect(!left.contains { $0.hasPrefix(made[0]) || $0.hasPrefix(made[1]) }, "nothing of an older snapshot is left")
        #expect(try await uploader.pruneSnapshots(keep: 2) == 0)
    }
}
