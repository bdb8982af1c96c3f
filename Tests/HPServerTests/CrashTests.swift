import Foundation
import GRDB
import Testing
@testable import HealthProbeArchive
import HealthProbeTestSupport

@Suite("Crash safety", .blocksOnTools)
struct CrashTests {
    @Test("SIGKILL inside the apply transaction (held there by a failpoint): the replica keeps nothing of the bundle, verify passes, the next sync completes")
    func killMidApply() throws {
        let data = TempDir(), home = TempDir()
        #expect(try hpServer(["init", "--data", data.path]).0 == 0)
        #expect(try hpNode(["--home", home.path, "capture", "--simulate", "--days", "20"]).0 == 0)
        let status = try JSONSerialization.jsonObject(with: Data(try hpNode(["--home", home.path, "status", "--json"]).1.utf8)) as? [String: Any]
        let chain = try #require(status?["device_chain_hash"] as? String)
        let incoming = data.path + "/chains/\(chain)/bundles/00000001.jsonl.gz.incoming"

        // The failpoint holds the server inside the apply's transaction, the bundle applied and
        // not committed, and says so with a file: the kill provably lands there.
        let marker = data.path + "/inside-the-transaction"
        let server = try ServerProcess(data: data.path, environment: ["HP_FAILPOINT_BEFORE_COMMIT": marker])
        try enrollWithCLI(data: data.path, home: home.path, name: "phone", port: server.port)
        let node = try launchTool("hp-node", ["--home", home.path, "sync"])
        let deadline = Date().addingTimeInterval(60)
        while !FileManager.default.fileExists(atPath: marker) && Date() < deadline && server.process.isRunning { usleep(2_000) }
        #expect(FileManager.default.fileExists(atPath: marker), "the apply never reached its commit")
        #expect(FileManager.default.fileExists(atPath: incoming), "the bundle is kept as .incoming until the commit")
        kill(server.process.processIdentifier, SIGKILL)
        server.process.waitUntilExit()
        node.waitUntilExit()
        #expect(node.terminationStatus != 0, "the node cannot have been acknowledged")

        // Nothing half-written: the log and the observations agree (all or nothing).
        let replica = try rawQueue(data.path + "/chains/\(chain)/replica.sqlite")
        let (logged, observations) = try replica.read { db in
            (try Int.fetchOne(db, sql: "SELECT count(*) FROM bundle_log")!, try Int.fetchOne(db, sql: "SELECT count(*) FROM observations")!)
        }
        #expect(logged == 0 && observations == 0, "killed before the commit: nothing of the bundle stays")
        let verify = try hpServer(["verify", "--data", data.path, "--full"])
        #expect(verify.0 == 0, "\(verify.1)")

        // A restarted server takes the sync to completion; digests agree.
        let again = try ServerProcess(data: data.path)
        let sync = try hpNode(["--home", home.path, "sync", "--server", "127.0.0.1:\(again.port)"])
        #expect(sync.0 == 0, "\(sync.2)")
        again.stop()
        func digest(_ s: String) -> String? { (try? JSONSerialization.jsonObject(with: Data(s.utf8)) as? [String: Any])?["digest"] as? String }
        let nodeDigest = digest(try hpNode(["--home", home.path, "digest", "--at", "1", "--json"]).1)
        let serverDigest = digest(try hpServer(["digest", "--data", data.path, "--chain", String(chain.prefix(12)), "--at", "1", "--json"]).1)
        #expect(nodeDigest != nil && nodeDigest == serverDigest)
        #expect(try hpServer(["verify", "--data", data.path, "--full"]).0 == 0)
    }
}
