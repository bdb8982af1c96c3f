import Foundation
import Testing
import HealthProbeTestSupport

/// The `digest` of `hp-server digest --json` or `hp-node digest --json` output.
func jsonDigest(_ text: String) -> String? {
    (try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])?["digest"] as? String
}

/// A new data directory at `data` whose server received one simulated capture of `days` days
/// from a node at `home` enrolled as `name`, then stopped; returns the node's chain hash.
func dataWithOneSync(data: String, home: String, name: String, seed: Int, days: Int) throws -> String {
    #expect(try hpServer(["init", "--data", data]).0 == 0)
    #expect(try hpNode(["--home", home, "capture", "--simulate", "--seed", "\(seed)", "--days", "\(days)"]).0 == 0)
    let server = try ServerProcess(data: data)
    try enrollWithCLI(data: data, home: home, name: name, port: server.port)
    #expect(try hpNode(["--home", home, "sync"]).0 == 0)
    server.stop()
    return try nodeChain(home)
}

/// A node's chain hash (`hp-node status --json`).
func nodeChain(_ home: String) throws -> String {
    let status = try JSONSerialization.jsonObject(with: Data(try hpNode(["--home", home, "status", "--json"]).1.utf8)) as? [String: Any]
    return try #require(status?["device_chain_hash"] as? String)
}

@Suite("Online backup and restore", .blocksOnTools)
struct BackupTests {
    @Test("a backup taken while nodes sync verifies; restored from it, every chain's digest is the original's and a node syncs on without enrolling again")
    func backupWhileSyncingAndRestore() throws {
        let data = TempDir(), homeA = TempDir(), homeB = TempDir(), backups = TempDir(), restoredParent = TempDir()
        #expect(try hpServer(["init", "--data", data.path]).0 == 0)
        #expect(try hpNode(["--home", homeA.path, "capture", "--simulate", "--seed", "3", "--days", "20"]).0 == 0)
        #expect(try hpNode(["--home", homeA.path, "capture", "--simulate", "--seed", "3", "--days", "2"]).0 == 0)
        #expect(try hpNode(["--home", homeB.path, "capture", "--simulate", "--seed", "4", "--days", "20"]).0 == 0)
        let chainA = try nodeChain(homeA.path), chainB = try nodeChain(homeB.path)
        let server = try ServerProcess(data: data.path)
        try enrollWithCLI(data: data.path, home: homeA.path, name: "anna-phone", port: server.port)
        try enrollWithCLI(data: data.path, home: homeB.path, name: "ben-watch", port: server.port)
        #expect(try hpNode(["--home", homeA.path, "sync"]).0 == 0)

        // Backups while B's large first sync runs (and A syncs more).
        #expect(try hpNode(["--home", homeA.path, "capture", "--simulate", "--seed", "3", "--days", "1"]).0 == 0)
        let sync = try launchTool("hp-node", ["--home", homeB.path, "sync"])
        var taken: [String] = []
        func backUp() throws {
            let target = backups.path + "/b\(taken.count)"
            let r = try hpServer(["backup", "--data", data.path, "--to", target, "--json"])
            #expect(r.0 == 0, "\(r.2)")
            taken.append(target)
        }
        // The first copy is begun while B's first sync still runs (else this tests nothing):
        // at once, before A's sync starts beside it.
        #expect(sync.isRunning, "B's sync ended before the first backup began")
        try backUp()
        let syncA = try launchTool("hp-node", ["--home", homeA.path, "sync"])
        while (sync.isRunning || syncA.isRunning) && taken.count < 3 { try backUp() }
        sync.waitUntilExit()
        syncA.waitUntilExit()
        #expect(sync.terminationStatus == 0 && syncA.terminationStatus == 0)
        for target in taken {
            let verify = try hpServer(["verify", "--data", target, "--full"])
            #expect(verify.0 == 0, "\(target): \(verify.1) \(verify.2)")
        }
        // One more with both syncs done: it holds everything.
        let last = backups.path + "/final"
        #expect(try hpServer(["backup", "--data", data.path, "--to", last]).0 == 0)
        // A backup is a copy: served as it is, with the live config it holds, it would neither back up nor upload.
        #expect(try hpServer(["adopt", "--data", last, "--json"]).1.contains("\"restored\" : \"a backup of \(data.path)"))
        #expect(try hpServer(["adopt", "--data", last, "--json"]).1.contains("\"adopted\" : false"))
        // Quick here: the copies taken during the syncs were verified in full above, and the
        // replicas rebuilt from this one are verified in full below.
        #expect(try hpServer(["verify", "--data", last]).0 == 0)
        let refused = try hpServer(["backup", "--data", data.path, "--to", last])
        #expect(refused.0 != 0 && refused.2.contains("not empty"), "\(refused.2)")

        // Restore on "a new machine", both chains at once.
        let restored = restoredParent.path + "/data"
        let r = try hpServer(["restore", "--from", last, "--data", restored, "--jobs", "2", "--json"])
        #expect(r.0 == 0, "\(r.2)")
        let report = try JSONSerialization.jsonObject(with: Data(r.1.utf8)) as? [String: Any]
        let chains = report?["chains"] as? [[String: Any]] ?? []
        #expect(chains.count == 2)
        #expect(chains.map { $0["chain"] as? String ?? "" } == [chainA, chainB].sorted(), "the report lists chains in order")
        for c in chains { #expect(c["digest"] as? String != nil && c["digest"] as? String == c["expected_digest"] as? String) }
        for chain in [chainA, chainB] {
            let original = jsonDigest(try hpServer(["digest", "--data", data.path, "--chain", chain, "--json"]).1)
            let rebuilt = jsonDigest(try hpServer(["digest", "--data", restored, "--chain", chain, "--json"]).1)
            #expect(original != nil && original == rebuilt)
        }
        #expect(try hpServer(["verify", "--data", restored, "--full"]).0 == 0)
        let again = try hpServer(["restore", "--from", last, "--data", restored])
        #expect(again.0 != 0 && again.2.contains("not empty"), "\(again.2)")
        let noJobs = try hpServer(["restore", "--from", last, "--data", restoredParent.path + "/other", "--jobs", "0"])
        #expect(noJobs.0 != 0 && noJobs.2.contains("--jobs must be 1 to 64"), "\(noJobs.2)")
        // One chain's bundle altered: with both chains rebuilt at once, the restore is refused
        // naming that chain, and leaves nothing behind.
        let damaged = backups.path + "/damaged"
        try FileManager.default.copyItem(atPath: last, toPath: damaged)
        let bundles = damaged + "/chains/" + chainB + "/bundles"
        let first = bundles + "/" + (try #require(try FileManager.default.contentsOfDirectory(atPath: bundles).sorted().first))
        var bytes = try Data(contentsOf: URL(fileURLWithPath: first))
        bytes[bytes.count / 2] ^= 0x20
        try bytes.write(to: URL(fileURLWithPath: first))
        let refusedTarget = restoredParent.path + "/refused"
        let refusedRestore = try hpServer(["restore", "--from", damaged, "--data", refusedTarget, "--jobs", "2"])
        #expect(refusedRestore.0 != 0 && refusedRestore.2.contains("chain \(chainB.prefix(16))") && refusedRestore.2.contains("sequence 1 ("), "\(refusedRestore.2)")
        // Nothing of it is left (no marker, no fetched bundle, no registry): the same command can run again.
        #expect(!FileManager.default.fileExists(atPath: refusedTarget), "a refused restore leaves \(String(describing: try? FileManager.default.contentsOfDirectory(atPath: refusedTarget)))")
        try FileManager.default.createDirectory(atPath: refusedTarget, withIntermediateDirectories: false)
        let refusedIntoEmpty = try hpServer(["restore", "--from", damaged, "--data", refusedTarget])
        #expect(refusedIntoEmpty.0 != 0)
        #expect(try FileManager.default.contentsOfDirectory(atPath: refusedTarget).isEmpty, "a refused restore into an empty directory leaves it empty")

        // The old machine is gone; A syncs on to the restored server with its enrollment.
        server.stop()
        let newServer = try ServerProcess(data: restored)
        #expect(try hpNode(["--home", homeA.path, "capture", "--simulate", "--seed", "3", "--days", "1"]).0 == 0)
        let on = try hpNode(["--home", homeA.path, "sync", "--server", "127.0.0.1:\(newServer.port)"])
        #expect(on.0 == 0, "\(on.2)")
        let nodeDigest = jsonDigest(try hpNode(["--home", homeA.path, "digest", "--json"]).1)
        let serverDigest = jsonDigest(try hpServer(["digest", "--data", restored, "--chain", chainA, "--json"]).1)
        #expect(nodeDigest != nil && nodeDigest == serverDigest)
    }

    @Test("a restore killed inside its first apply leaves what no command takes for a data directory, not even init; emptied as the message says, it runs again")
    func restoreKilledInsideItsApply() throws {
        let data = TempDir(), home = TempDir(), backups = TempDir(), restoredParent = TempDir()
        let chain = try dataWithOneSync(data: data.path, home: home.path, name: "ben-watch", seed: 4, days: 5)
        let last = backups.path + "/final"
        #expect(try hpServer(["backup", "--data", data.path, "--to", last]).0 == 0)

        // Killed inside its first apply: no command takes what it left for a data directory
        // (with more chains, the ones already rebuilt would pass every check), not even `init`;
        // removed, it runs again.
        let killed = restoredParent.path + "/killed", inside = restoredParent.path + "/inside-the-apply"
        let restore = try launchTool("hp-server", ["restore", "--from", last, "--data", killed], environment: ["HP_FAILPOINT_BEFORE_COMMIT": inside])
        let deadline = Date().addingTimeInterval(60)
        while !FileManager.default.fileExists(atPath: inside) && Date() < deadline && restore.isRunning { usleep(2_000) }
        #expect(FileManager.default.fileExists(atPath: inside), "the restore never reached its first commit")
        kill(restore.processIdentifier, SIGKILL)
        restore.waitUntilExit()
        for args in [["verify", "--data", killed], ["chains", "--data", killed], ["init", "--data", killed],
                     ["restore", "--from", last, "--data", killed]] {
            let r = try hpServer(args)
            #expect(r.0 != 0 && r.2.contains("holds a restore that is still running or did not finish") && r.2.contains("find \(killed)/ -mindepth 1 -delete"), "\(args[0]): \(r.2)")
        }
        #expect(!FileManager.default.fileExists(atPath: killed + "/healthprobe-server"), "init made a data directory of a half restore")
        // Emptied as the message says (the directory kept, as one an administrator made would be), it runs again.
        for name in try FileManager.default.contentsOfDirectory(atPath: killed) { try FileManager.default.removeItem(atPath: killed + "/" + name) }
        #expect(try hpServer(["restore", "--from", last, "--data", killed]).0 == 0)
        #expect(jsonDigest(try hpServer(["digest", "--data", killed, "--chain", chain, "--json"]).1) == jsonDigest(try hpServer(["digest", "--data", data.path, "--chain", chain, "--json"]).1))
    }
}
