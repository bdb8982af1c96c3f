import Foundation
import Testing
@testable import HealthProbeArchive
@testable import HealthProbeServer
import HealthProbeProtocol
import HealthProbeNode
import HealthProbeTestSupport

/// What the server keeps of a received bundle: its parts as they arrived, one gzip
/// member each, which re-verify to the logged manifest hash and show damage.
@Suite("Kept bundles")
struct KeptBundleTests {
    @Test("a synced bundle is kept as gzip members (gzip -dc gives its lines, which verify); a damaged byte is named by hp-server verify")
    func keptAsReceived() async throws {
        let data = TempDir()
        let home = TempHome()
        try simulate(home, days: 2)
        var chain = ""
        try await withServer(data) { server in
            let e = try await server.enroll("a")
            _ = try await SyncClient(node: try home.open(), outbox: home.root + "/outbox").sync(e)
            chain = try #require(try server.store.chains().first)
        }
        let store = ServerStore(root: data.path)
        let kept = store.bundlePath(chain, sequence: 1)
        #expect(store.storedBundlePath(chain, sequence: 1) == kept)
        #expect(GzipParts.isGzip(kept))
        #expect(try ServerVerifier.run(store, mode: .full).allSatisfy(\.ok))

        // Any gzip tool reads it; its lines are the bundle the log holds.
        let plain = data.file("plain.jsonl")
        let gzip = Process()
        gzip.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        gzip.arguments = ["sh", "-c", "gzip -dc \"$0\" > \"$1\"", kept, plain]
        try gzip.run()
        gzip.waitUntilExit()
        #expect(gzip.terminationStatus == 0)
        let logged = try store.readReplica(chain) { db in try String.fetchOne(db, sql: "SELECT manifest_hash FROM bundle_log WHERE sequence = 1") }
        let (header, verifier) = try BundleFile.verify(plain, expected: logged)
        #expect(header.sequence == 1 && header.deviceChainHash == chain)
        #expect(verifier.itemCount > 0)
        // Smaller than the lines (a first sync of a million samples: 283 MB against 1.74 GB).
        let keptSize = try #require(try FileManager.default.attributesOfItem(atPath: kept)[.size] as? Int)
        let plainSize = try #require(try FileManager.default.attributesOfItem(atPath: plain)[.size] as? Int)
        #expect(keptSize * 3 < plainSize, "\(keptSize) bytes kept for \(plainSize)")

        // One byte of deflate data damaged (a new file: the replica's hard link is not touched).
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: kept)))
        bytes[bytes.count / 2] ^= 0x10
        try FileManager.default.removeItem(atPath: kept)
        try Data(bytes).write(to: URL(fileURLWithPath: kept))
        let report = try ServerVerifier.run(store, mode: .full)
        let stored = try #require(report.first?.checks.first { $0.name == "stored_bundles" })
        #expect(stored.status == .problem)
        #expect(stored.detail.contains("sequence 1") && stored.detail.contains("damaged at byte"), "\(stored.detail)")
    }
}
