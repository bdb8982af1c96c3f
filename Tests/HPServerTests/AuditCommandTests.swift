import Foundation
import Testing
import HealthProbeTestSupport

/// `hp-server audit`: the CLI's own actions are recorded with the operator's name, and listed.
@Suite("hp-server audit", .blocksOnTools)
struct AuditCommandTests {
    @Test("person add, role, password, remove, enroll, revoke and verify from the CLI are each recorded once, newest first, without secrets")
    func cliActions() throws {
        let data = TempDir()
        #expect(try hpServer(["init", "--data", data.path]).0 == 0)
        #expect(try hpServer(["audit", "--data", data.path]).1.contains("no admin or sharing actions recorded"))
        let password = "a-long-enough-password"
        for (name, role) in [("ann", "admin"), ("bob", "member")] {
            #expect(try runTool("hp-server", ["person", "add", name, "--role", role, "--password-stdin", "--bcrypt-cost", "4", "--data", data.path], stdin: password + "\n").0 == 0)
        }
        #expect(try runTool("hp-server", ["person", "password", "bob", "--password-stdin", "--bcrypt-cost", "4", "--data", data.path], stdin: password + "x\n").0 == 0)
        #expect(try hpServer(["person", "role", "bob", "viewer", "--data", data.path]).0 == 0)
        #expect(try hpServer(["person", "role", "bob", "member", "--data", data.path]).0 == 0)
        let token = try hpServer(["enroll", "--data", data.path, "--name", "bob-phone", "--person", "bob", "--address", "127.0.0.1:7447"])
        #expect(token.0 == 0)
        #expect(try hpServer(["revoke", "bob-phone", "--data", data.path]).0 == 0)
        #expect(try hpServer(["verify", "--data", data.path]).0 == 0)
        let out = try hpServer(["audit", "--data", data.path, "--json"])
        #expect(out.0 == 0)
        let entries = try #require(try JSONSerialization.jsonObject(with: Data(out.1.utf8)) as? [[String: Any]])
        let actions = entries.map { "\($0["action"] as? String ?? "") \($0["target"] as? String ?? "")" }
        #expect(actions == ["verify ", "device.revoke bob-phone", "device.token bob-phone", "person.role bob", "person.role bob",
                            "person.password bob", "person.add bob", "person.add ann"], "\(actions)")
        #expect(entries.allSatisfy { $0["via"] as? String == "cli" && !($0["actor"] as? String ?? "").isEmpty })
        #expect(!out.1.contains(password) && !out.1.contains("hpenroll1"))
        let text = try hpServer(["audit", "--data", data.path, "--limit", "2"]).1
        #expect(text.contains("verify") && text.contains("device.revoke") && !text.contains("person.add"))
        #expect(try hpServer(["audit", "--data", data.path, "--limit", "0"]).0 != 0)
    }
}
