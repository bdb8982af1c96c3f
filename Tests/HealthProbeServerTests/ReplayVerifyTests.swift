import Foundation
import GRDB
import Testing
@testable import HealthProbeArchive
@testable import HealthProbeServer
import HealthProbeProtocol
import HealthProbeTestSupport

/// `hp-server verify --full` applies a chain's stored bundles again with every check a
/// server applying them makes now (Protocol/bundles.md section 5.2): a chain a server
/// stored before a rule existed is refused there, at the bundle that breaks it.
@Suite("Verify --full replays stored bundles")
struct ReplayVerifyTests {
    /// The committed chain's bundle `n` (a plain line file) and its manifest hash.
    static func vector(_ name: String) throws -> (path: String, hash: String) {
        let path = vectorURL("bundles/" + name).path
        let (_, verifier) = try BundleFile.verify(path, expected: nil)
        return (path, verifier.manifestHash ?? "")
    }

    @Test("what the claim inside an apply throws (another device holds the chain) refuses the bundle before its commit: nothing applied, nothing kept")
    func claimRefuses() throws {
        let data = TempDir()
        let store = ServerStore(root: data.path)
        try store.create()
        let (path, hash) = try Self.vector("chain/1.jsonl")
        #expect { try store.apply(file: path, manifestHash: hash, now: 1_750_000_000, claim: { throw SyncProtocolError(.forbidden, "another device holds the chain") }) }
            throws: { ($0 as? SyncProtocolError)?.code == .forbidden }
        for chain in try store.chains() {
            #expect(try store.status(chain).0 == 0)
            #expect((try? FileManager.default.contentsOfDirectory(atPath: store.bundlesDirectory(chain))) ?? [] == [])
        }
        // Claimed, the same bundle applies.
        var claimed = 0
        _ = try store.apply(file: path, manifestHash: hash, now: 1_750_000_000, claim: { claimed += 1 })
        #expect(claimed == 1)
    }

    @Test("a valid chain replays to the replica's digest; a bundle that closes a range twice, stored by an earlier server, is named")
    func replay() throws {
        let data = TempDir()
        let store = ServerStore(root: data.path)
        try store.create()
        var chain = ""
        for name in ["chain/1.jsonl", "chain/2.jsonl"] {
            let (path, hash) = try Self.vector(name)
            chain = try store.apply(file: path, manifestHash: hash, now: 1_750_000_000).chain
        }
        let ok = try #require(try ServerVerifier.run(store, mode: .full).first)
        #expect(ok.ok, "\(ok.checks.filter { $0.status == .problem })")
        #expect(ok.checks.first { $0.name == "bundle_replay" }?.status == .ok)
        #expect(try ServerVerifier.run(store, mode: .quick).first?.checks.contains { $0.name == "bundle_replay" } == false, "--quick does not replay")

        // What a server that let the same range_close through twice kept: the same rows
        // (closing a range again with the same values changed nothing), the bundle as it came.
        let (twice, twiceHash) = try Self.vector("range-closed-twice.jsonl")
        let replica = try Archive.open(path: store.replicaPath(chain), singleConnection: true)
        try replica.writer.write { db in
            try db.execute(sql: "UPDATE bundle_log SET manifest_hash = ? WHERE direction = 'received' AND sequence = 2", arguments: [twiceHash])
        }
        try (replica.writer as? DatabaseQueue)?.close()
        let kept = try #require(store.storedBundlePath(chain, sequence: 2))
        try FileManager.default.removeItem(atPath: kept)
        try FileManager.default.copyItem(atPath: twice, toPath: store.bundlePath(chain, sequence: 2, gzip: false))
        let report = try #require(try ServerVerifier.run(store, mode: .full).first)
        let stored = try #require(report.checks.first { $0.name == "stored_bundles" })
        #expect(stored.status == .ok, "its bytes verify: \(stored.detail)")
        let replay = try #require(report.checks.first { $0.name == "bundle_replay" })
        #expect(replay.status == .problem)
        #expect(replay.detail.contains("sequence 2") && replay.detail.contains("reference") && replay.detail.contains("closed already"), "\(replay.detail)")
        #expect(!report.ok)
    }
}
