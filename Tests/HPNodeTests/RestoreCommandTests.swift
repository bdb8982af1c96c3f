import Foundation
import GRDB
import Testing
import HealthProbeTestSupport

/// `hp-node restore` and `hp-server enroll --restore-chain` through the built binaries,
/// with a real `hp-server serve` on 127.0.0.1.
@Suite("hp-node restore", .blocksOnTools)
struct RestoreCommandTests {
    @Test("after reset --keep-chain the node restores and syncs on; a replacement device with the old keys restores with a restore token; without keys it says what to copy")
    func restore() throws {
        let data = TempDir(), home = TempDir()
        #expect(try hpServer(["init", "--data", data.path]).0 == 0)
        #expect(try hpNode(["--home", home.path, "capture", "--simulate", "--seed", "3", "--days", "1"]).0 == 0)
        #expect(try hpNode(["--home", home.path, "capture", "--simulate", "--seed", "3", "--days", "2"]).0 == 0)
        let server = try ServerProcess(data: data.path)
        try enrollWithCLI(data: data.path, home: home.path, name: "ann-phone", port: server.port)
        #expect(try hpNode(["--home", home.path, "sync"]).0 == 0)
        let before = try hpNode(["--home", home.path, "digest", "--json"])

        #expect(try hpNode(["--home", home.path, "reset", "--yes-delete-archive", "--keep-chain"]).0 == 0)
        let restored = try hpNode(["--home", home.path, "restore"])
        #expect(restored.0 == 0 && restored.1.contains("bundles restored") && restored.1.contains("capture and sync on"), "\(restored)")
        #expect(try hpNode(["--home", home.path, "digest", "--json"]).1 == before.1, "the same chain state as before the reset")
        let again = try hpNode(["--home", home.path, "restore", "--json"])
        let report = try #require(try JSONSerialization.jsonObject(with: Data(again.1.utf8)) as? [String: Any])
        #expect(report["restored"] as? Int == 0 && report["last_sequence"] as? Int == 2)
        #expect(try hpNode(["--home", home.path, "capture", "--simulate", "--seed", "3", "--days", "3"]).0 == 0)
        let sync = try hpNode(["--home", home.path, "sync"])
        #expect(sync.0 == 0 && sync.1.contains("sequence 3"), "\(sync)")

        // A replacement device: the old keys copied in, a restore token from the administrator.
        let replacement = TempDir()
        try FileManager.default.createDirectory(atPath: replacement.path + "/keys", withIntermediateDirectories: true)
        for f in ["archive-secret", "device-chain-seed"] {
            try FileManager.default.copyItem(atPath: home.path + "/keys/" + f, toPath: replacement.path + "/keys/" + f)
        }
        let chains = try hpServer(["chains", "--data", data.path, "--json"])
        let chain = try #require((try JSONSerialization.jsonObject(with: Data(chains.1.utf8)) as? [[String: Any]])?.first?["chain"] as? String)
        let issued = try hpServer(["enroll", "--data", data.path, "--name", "ann-new-phone", "--address", "127.0.0.1:\(server.port)",
                                   "--restore-chain", String(chain.prefix(10))])
        #expect(issued.0 == 0 && issued.2.contains("takes chain"), "\(issued)")
        let token = issued.1.trimmingCharacters(in: .whitespacesAndNewlines)
        // A second restore token for the same chain: once the first takes it over, this one is stale, and the list says what to do.
        let spare = try hpServer(["enroll", "--data", data.path, "--name", "ann-spare", "--address", "127.0.0.1:\(server.port)", "--restore-chain", String(chain.prefix(10))])
        #expect(spare.0 == 0 && spare.2.contains("note: ann-new-phone also holds a restore token for this chain"), "\(spare)")
        let pending = try hpServer(["devices", "--data", data.path])
        #expect(pending.1.contains("restore token issued") && pending.1.contains("(restores \(chain.prefix(12)))"), "\(pending)")
        let empty = TempDir()
        let noKeys = try hpNode(["--home", empty.path, "restore", "--token", token])
        #expect(noKeys.0 != 0 && noKeys.2.contains("archive-secret"), "\(noKeys)")
        #expect(!FileManager.default.fileExists(atPath: empty.path + "/keys/archive-secret"), "asking made no key")
        // A damaged copy of a key is named before anything is fetched or enrolled.
        let damaged = TempDir()
        try FileManager.default.copyItem(atPath: replacement.path + "/keys", toPath: damaged.path + "/keys")
        try "not a key\n".write(toFile: damaged.path + "/keys/device-chain-seed", atomically: true, encoding: .utf8)
        let badKey = try hpNode(["--home", damaged.path, "restore", "--token", token])
        #expect(badKey.0 != 0 && badKey.2.contains("device-chain-seed is damaged"), "\(badKey)")
        #expect(!FileManager.default.fileExists(atPath: damaged.path + "/keys/server.json"), "not enrolled")
        let onNew = try hpNode(["--home", replacement.path, "restore", "--token", token, "--json"])
        let newReport = try #require(try JSONSerialization.jsonObject(with: Data(onNew.1.utf8)) as? [String: Any], "\(onNew)")
        #expect(newReport["restored"] as? Int == 3)
        let devices = try hpServer(["devices", "--data", data.path])
        #expect(devices.1.contains("ann-new-phone"))
        #expect(devices.1.contains("restore token stale") && devices.1.contains("ann-spare: its restore token was issued before the chain moved to another device"), "\(devices)")
        let listed = try JSONSerialization.jsonObject(with: Data(try hpServer(["devices", "--data", data.path, "--json"]).1.utf8)) as? [[String: Any]]
        #expect(Dictionary(uniqueKeysWithValues: (listed ?? []).map { ($0["name"] as? String ?? "", $0["state"] as? String ?? "") })
                == ["ann-phone": "replaced", "ann-new-phone": "enrolled", "ann-spare": "restore_token_stale"])
        #expect(devices.1.contains("ann-phone: ann-new-phone took its chain over and it holds none, but its credential still works; revoke it"), "\(devices)")
        #expect(try hpNode(["--home", home.path, "sync"]).0 != 0, "the old device no longer owns the chain")
    }

    @Test("hp-node restore killed (SIGKILL) while it applies bundles leaves whole bundles; run again, it continues and ends equal to the server")
    func killedRestoreContinues() throws {
        let data = TempDir(), home = TempDir()
        #expect(try hpServer(["init", "--data", data.path]).0 == 0)
        for _ in 1...8 { #expect(try hpNode(["--home", home.path, "capture", "--simulate", "--seed", "4", "--days", "1"]).0 == 0) }
        let server = try ServerProcess(data: data.path)
        try enrollWithCLI(data: data.path, home: home.path, name: "ann-phone", port: server.port)
        #expect(try hpNode(["--home", home.path, "sync"]).0 == 0)
        let before = try hpNode(["--home", home.path, "digest", "--json"]).1
        #expect(try hpNode(["--home", home.path, "reset", "--yes-delete-archive", "--keep-chain"]).0 == 0)

        // Killed once it has applied at least one bundle (read from its archive's log without its lock).
        let archive = home.path + "/archive/HealthProbeArchive.sqlite"
        let restoring = try launchTool("hp-node", ["--home", home.path, "restore"])
        var applied = 0
        let deadline = Date().addingTimeInterval(60)
        while restoring.isRunning && applied == 0 && Date() < deadline {
            usleep(20_000)
            applied = (try? DatabaseQueue(path: archive, configuration: { var c = Configuration(); c.readonly = true; return c }())
                .read { try Int.fetchOne($0, sql: "SELECT count(*) FROM bundle_log WHERE direction = 'received'") ?? 0 }) ?? 0
        }
        kill(restoring.processIdentifier, SIGKILL)
        restoring.waitUntilExit()
        let again = try hpNode(["--home", home.path, "restore", "--json"])
        let report = try #require(try JSONSerialization.jsonObject(with: Data(again.1.utf8)) as? [String: Any], "\(again)")
        #expect(report["last_sequence"] as? Int == 8)
        #expect((report["had_sequence"] as? Int ?? -1) >= 1 && (report["had_sequence"] as? Int ?? 99) < 8,
                "the kill came between the first and the last bundle: \(report)")
        #expect(try hpNode(["--home", home.path, "digest", "--json"]).1 == before)
        #expect(try hpNode(["--home", home.path, "verify", "--full"]).0 == 0)
    }
}
