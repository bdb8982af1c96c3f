import Foundation
import GRDB
import Testing
@testable import HealthProbeServer
import HealthProbeTestSupport

/// A data directory rebuilt from a real S3-compatible store (SeaweedFS on 127.0.0.1), and two
/// servers writing one prefix.
@Suite("Bundles off the machine (S3): restores and takeovers", .enabled(if: SeaweedS3.available, Comment(rawValue: SeaweedS3.skipReason)), .serialized, .blocksOnTools)
struct OffsiteRestoreTests: OffsiteSupport {
    @Test("the data directory deleted, a restore from the bucket gives equal digests, the registry change after the last bundle included, and a node syncs on; the restored copy uploads nothing until adopted")
    func restoreFromBucket() async throws { try await withStore(restoreFromBucket) }

    func restoreFromBucket(_ s3: SeaweedS3) async throws {
        let (_, config, objects) = try await freshBucket(s3, prefix: "house/one")
        let data = TempDir(), home = TempDir(), elsewhere = TempDir()
        #expect(try hpServer(["init", "--data", data.path]).0 == 0)
        try config.write(toFile: data.file("config.json"), atomically: true, encoding: .utf8)
        try config.write(toFile: elsewhere.file("config.json"), atomically: true, encoding: .utf8)
        var server: ServerProcess? = try ServerProcess(data: data.path)
        try enrollWithCLI(data: data.path, home: home.path, name: "anna-phone", port: server!.port)
        for days in ["10", "1"] {
            #expect(try hpNode(["--home", home.path, "capture", "--simulate", "--seed", "5", "--days", days]).0 == 0)
            #expect(try hpNode(["--home", home.path, "sync"]).0 == 0)
        }
        let chain = try nodeChain(home.path)
        try await logging(server!) { try await waitFor("both bundles uploaded") { let q = try queue(data.path); return q.all == 2 && q.pending == 0 } }
        // A registry change with no bundle after it (a person added) reaches the bucket too.
        #expect(try hpServer(["person", "add", "bob", "--role", "member", "--data", data.path]).0 == 0)
        let added = Date().timeIntervalSince1970
        try await logging(server!) { try await waitForSnapshot(objects, prefix: "house/one", after: added) }
        let original = jsonDigest(try hpServer(["digest", "--data", data.path, "--chain", chain, "--json"]).1)

        // The machine is lost.
        kill(server!.process.processIdentifier, SIGKILL)
        server!.process.waitUntilExit()
        server = nil
        try FileManager.default.removeItem(atPath: data.path)
        let restored = elsewhere.path + "/data"
        // A mistyped prefix is named as the one given, and leaves nothing: the right one then runs into the same directory.
        let mistyped = try hpServer(["restore", "--from", "s3://healthprobe/house/on", "--config", elsewhere.file("config.json"), "--data", restored])
        #expect(mistyped.0 != 0 && mistyped.2.contains("holds no complete registry snapshot") && mistyped.2.contains("s3://BUCKET/PREFIX"), "\(mistyped.2)")
        #expect(!FileManager.default.fileExists(atPath: restored))
        let r = try hpServer(["restore", "--from", "s3://healthprobe/house/one", "--config", elsewhere.file("config.json"), "--data", restored, "--json"])
        #expect(r.0 == 0, "\(r.2)")
        let left = try FileManager.default.contentsOfDirectory(atPath: restored).filter { $0.contains("download") || $0.hasPrefix("restore-") }
        #expect(left.isEmpty, "the restore left \(left)")
        let rebuilt = jsonDigest(try hpServer(["digest", "--data", restored, "--chain", chain, "--json"]).1)
        #expect(original != nil && rebuilt == original)
        #expect(try hpServer(["verify", "--data", restored, "--full"]).0 == 0)
        #expect(try hpServer(["person", "list", "--data", restored]).1.contains("bob"), "the registry change after the last bundle was restored")
        // The old config given to the copy: it serves, but puts nothing into the bucket until adopted
        // (a drill's copy must never make its registry the bucket's newest snapshot).
        try config.write(toFile: restored + "/config.json", atomically: true, encoding: .utf8)
        let newServer = try ServerProcess(data: restored)
        let snapshotsBefore = try await objects.list(prefix: "house/one/snapshots/").filter { $0.contains("/server.sqlite-") }.count
        #expect(try hpNode(["--home", home.path, "capture", "--simulate", "--seed", "5", "--days", "1"]).0 == 0)
        let on = try hpNode(["--home", home.path, "sync", "--server", "127.0.0.1:\(newServer.port)"])
        #expect(on.0 == 0, "\(on.2)")
        #expect(jsonDigest(try hpNode(["--home", home.path, "digest", "--json"]).1) == jsonDigest(try hpServer(["digest", "--data", restored, "--chain", chain, "--json"]).1))
        try await Task.sleep(for: .seconds(8))  // longer than s3_snapshot_seconds and two upload rounds
        #expect(try queue(restored).pending == 1, "the copy's new bundle waits")
        #expect(try await objects.list(prefix: "house/one/snapshots/").filter { $0.contains("/server.sqlite-") }.count == snapshotsBefore)
        let adopted = try hpServer(["adopt", "--data", restored])
        #expect(adopted.0 == 0 && adopted.1.contains("adopted"), "\(adopted.2)")
        try await logging(newServer) {
            try await waitFor("the copy's bundle uploaded once adopted") { try queue(restored).pending == 0 }
            try await waitForSnapshots(objects, prefix: "house/one", moreThan: snapshotsBefore)
        }
        #expect(try hpServer(["audit", "--data", restored]).1.contains("server.adopt"))
        withExtendedLifetime(newServer) {}
    }

    @Test("two servers writing one bucket prefix (a copy no home check caught): both pause, whichever wrote first, and say which to stop; adopted, the live one takes the prefix over and the copy stays paused; a new server pointed at the prefix pauses instead of taking it over; adopt run on the live server before it looked takes the prefix over all the same")
    func secondWriterPauses() async throws { try await withStore(secondWriter) }

    func secondWriter(_ s3: SeaweedS3) async throws {
        let (_, config, objects) = try await freshBucket(s3, prefix: "house/four")
        let dir = TempDir()
        let live = dir.file("live"), copy = dir.file("copy"), fresh = dir.file("fresh")
        #expect(try hpServer(["init", "--data", live]).0 == 0)
        try config.write(toFile: live + "/config.json", atomically: true, encoding: .utf8)
        func complete() async throws -> Int { try await objects.list(prefix: "house/four/snapshots/").filter { $0.contains("/server.sqlite-") }.count }
        var liveServer = try ServerProcess(data: live)
        try await waitForSnapshots(objects, prefix: "house/four", moreThan: 0)
        liveServer.stop()
        // As a release before snapshot names were recorded leaves it: none recorded. The prefix's
        // snapshots carry its own TLS identity, so it goes on writing there without a word.
        try DeviceRegistry(path: live + "/server.sqlite").forgetOffsiteSnapshots()
        // A disk image of the live disk, served elsewhere: its home record is its own, as an image's would be.
        try copyDirectory(live, copy)
        try HomeDirectory.record(copy)
        #expect(RestoredCopy.paused(copy) == nil)
        let before = try await complete()
        liveServer = try ServerProcess(data: live)
        try await waitForSnapshots(objects, prefix: "house/four", moreThan: before)
        #expect(RestoredCopy.paused(live) == nil)
        var copyServer = try ServerProcess(data: copy)
        // The copy finds the live server's newer snapshot and marks the prefix; the live server sees the mark: both pause.
        try await waitFor("both servers to pause") { RestoredCopy.paused(live) != nil && RestoredCopy.paused(copy) != nil }
        let texts = [RestoredCopy.paused(live) ?? "", RestoredCopy.paused(copy) ?? ""]
        #expect(texts.contains { $0.contains("is not this server's") } && texts.contains { $0.contains("found a second writer") }, "\(texts)")
        #expect(texts.allSatisfy { $0.contains("Stop the copy (do not adopt it)") }, "\(texts)")
        // Each names itself, and the one that learned of the other from the prefix names it too (host and data directory).
        #expect(texts.contains { $0.contains(":" + live) && $0.contains(":" + copy) }, "\(texts)")
        #expect(try await objects.list(prefix: "house/four/writer-conflict").count == 1)
        // Uploads pause, scheduled backups do not (the live server's own must go on).
        #expect(RestoredCopy.paused(live, bucket: false) == nil)
        let paused = try await complete()
        #expect(try hpServer(["person", "add", "bob", "--role", "member", "--data", live]).0 == 0)
        try await Task.sleep(for: .seconds(7))  // longer than s3_snapshot_seconds
        #expect(try await complete() == paused, "a paused server wrote a snapshot")

        // Adopted, the live server takes the prefix over; the copy stays paused.
        let adopted = try hpServer(["adopt", "--data", live, "--json"])
        #expect(adopted.0 == 0 && adopted.1.contains("\"adopted\" : true"), "\(adopted.1) \(adopted.2)")
        try await waitForSnapshots(objects, prefix: "house/four", moreThan: paused)
        #expect(RestoredCopy.paused(live) == nil)
        #expect(try await objects.list(prefix: "house/four/writer-conflict").count == 1, "the takeover is said in the prefix, not deleted")
        #expect(try hpServer(["person", "add", "cem", "--role", "member", "--data", live]).0 == 0)
        try await waitForSnapshots(objects, prefix: "house/four", moreThan: paused + 1)
        #expect(RestoredCopy.paused(live) == nil, "the live server paused again after taking the prefix over")
        #expect(RestoredCopy.paused(copy) != nil)

        // A new server given the live one's config pauses instead of taking the prefix over.
        #expect(try hpServer(["init", "--data", fresh]).0 == 0)
        try config.write(toFile: fresh + "/config.json", atomically: true, encoding: .utf8)
        let freshServer = try ServerProcess(data: fresh)
        try await waitFor("the new server to pause") { RestoredCopy.paused(fresh) != nil }
        #expect(RestoredCopy.paused(fresh)?.contains("this server did not write (another server's prefix)") == true, "\(RestoredCopy.paused(fresh) ?? "")")
        #expect(RestoredCopy.paused(live) == nil)
        // The copy started again without its pause (one that never saw the conflict): the prefix
        // says another server took it over, so it pauses, however late it looks.
        copyServer.stop()
        try FileManager.default.removeItem(atPath: copy + "/" + SnapshotWriters.conflictFileName)
        copyServer = try ServerProcess(data: copy)
        try await waitFor("the copy to pause again") { RestoredCopy.paused(copy) != nil }
        #expect(RestoredCopy.paused(copy)?.contains("another server took the prefix over") == true, "\(RestoredCopy.paused(copy) ?? "")")
        #expect(RestoredCopy.paused(live) == nil)

        // `adopt` run on the live server before it has looked at the prefix since a second writer
        // marked it (the copy's message says to run it there): it asks for the takeover all the
        // same, and the server, started again, takes the prefix over without pausing first.
        copyServer.stop()
        liveServer.stop()
        let answered = try hpServer(["adopt", "--data", live, "--json"])
        #expect(answered.0 == 0 && answered.1.contains("\"adopted\" : false") && answered.1.contains("\"takeover_requested\" : false"), "its own takeover is in the prefix: \(answered.1)")
        let mark = dir.file("mark.json")
        try #"{"at":1,"by":"elsewhere:/copy","state":"conflict"}"#.write(toFile: mark, atomically: false, encoding: .utf8)
        try await objects.put(key: "house/four/" + SnapshotWriters.conflictKey, file: mark, sha256: try FileHash.sha256(mark))
        let early = try hpServer(["adopt", "--data", live, "--json"])
        #expect(early.0 == 0 && early.1.contains("\"adopted\" : false") && early.1.contains("\"takeover_requested\" : true"), "\(early.1) \(early.2)")
        #expect(SnapshotWriters.takeoverRequested(live))
        let takenBefore = try await complete()
        liveServer = try ServerProcess(data: live)
        try await waitForSnapshots(objects, prefix: "house/four", moreThan: takenBefore)
        #expect(RestoredCopy.paused(live) == nil && !SnapshotWriters.takeoverRequested(live))
        let back = dir.file("mark-back.json")
        try await objects.get(key: "house/four/" + SnapshotWriters.conflictKey, to: back, maxBytes: 4096)
        #expect(try String(contentsOfFile: back, encoding: .utf8).contains("\"taken_over\""), "the prefix says the live server took it over")
        // A store that does not answer: adopt still ends well, and says it could not look.
        let lone = dir.file("lone")
        #expect(try hpServer(["init", "--data", lone]).0 == 0)
        let deadPort = try freeLoopbackPorts(1)[0]
        try config.replacingOccurrences(of: s3.endpoint, with: "http://127.0.0.1:\(deadPort)").write(toFile: lone + "/config.json", atomically: false, encoding: .utf8)
        let unreachable = try hpServer(["adopt", "--data", lone])
        #expect(unreachable.0 == 0 && unreachable.1.contains("is not a copy") && unreachable.2.contains("could not be looked at for a second writer"), "\(unreachable.1) \(unreachable.2)")
        // The config `serve` is given with --config is the one adopt reads with --config: the live
        // server's prefix, with its own takeover there now.
        let elsewhere = try hpServer(["adopt", "--data", lone, "--config", live + "/config.json", "--json"])
        #expect(elsewhere.0 == 0 && elsewhere.1.contains("\"taken_over_by\""), "another server's takeover is named: \(elsewhere.1) \(elsewhere.2)")
        withExtendedLifetime((liveServer, copyServer, freshServer)) {}
    }
}
