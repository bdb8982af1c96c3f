import Foundation
import Logging
import Testing
import HealthProbeServer
import HealthProbeTestSupport

/// `hp-server alert channel ...` and `hp-server alert list`: checked input, secrets never
/// printed back, actions in the audit log.
@Suite("hp-server alert", .blocksOnTools)
struct AlertCommandTests {
    @Test("channel add, list (table and JSON), remove; bad targets refused with a reason")
    func channels() throws {
        let data = TempDir()
        #expect(try hpServer(["init", "--data", data.path]).0 == 0)
        #expect(try runTool("hp-server", ["person", "add", "ann", "--role", "admin", "--password-stdin", "--bcrypt-cost", "4", "--data", data.path],
                            stdin: "a-long-enough-password\n").0 == 0)
        let secret = "ann-secret-0123456789-WXYZ"
        let added = try hpServer(["alert", "channel", "add", "--data", data.path, "--person", "ann", "--webhook", "https://hooks.example/hp", "--secret", secret])
        #expect(added.0 == 0 && added.1.contains("channel 1 for ann"))
        #expect(try hpServer(["alert", "channel", "add", "--data", data.path, "--person", "ann", "--ntfy", "https://ntfy.example/ann"]).0 == 0)
        let bad = try hpServer(["alert", "channel", "add", "--data", data.path, "--person", "ann", "--webhook", "ftp://x"])
        #expect(bad.0 != 0 && bad.2.contains("http:// or https://"))
        #expect(try hpServer(["alert", "channel", "add", "--data", data.path, "--person", "ann", "--ntfy", "https://a/b", "--email", "a@b.org"]).0 != 0)
        let table = try hpServer(["alert", "channel", "list", "--data", data.path])
        #expect(table.0 == 0 && table.1.contains("…WXYZ") && !table.1.contains(secret) && table.1.contains("ntfy"))
        let json = try hpServer(["alert", "channel", "list", "--data", data.path, "--json"])
        let list = try #require(try JSONSerialization.jsonObject(with: Data(json.1.utf8)) as? [[String: Any]])
        #expect(list.count == 2 && list.first?["secret_hint"] as? String == "…WXYZ")
        #expect(try hpServer(["alert", "channel", "remove", "1", "--data", data.path, "--person", "ann"]).0 == 0)
        #expect(try hpServer(["alert", "channel", "remove", "1", "--data", data.path, "--person", "ann"]).0 != 0)
        #expect(try hpServer(["alert", "list", "--data", data.path]).1.contains("no alerts"))
        let audit = try hpServer(["audit", "--data", data.path, "--json"]).1
        #expect(audit.contains("alert.channel.add") && audit.contains("alert.channel.remove") && !audit.contains(secret))
    }

    @Test("quiet: hours in an IANA time zone stored with it; an unknown zone refused naming --zone; --clear removes them")
    func quietZone() throws {
        let data = TempDir()
        #expect(try hpServer(["init", "--data", data.path]).0 == 0)
        #expect(try runTool("hp-server", ["person", "add", "bob", "--role", "member", "--password-stdin", "--bcrypt-cost", "4", "--data", data.path],
                            stdin: "a-long-enough-password\n").0 == 0)
        let set = try hpServer(["alert", "quiet", "--data", data.path, "--person", "bob", "--from", "22:00", "--to", "07:00", "--zone", "America/New_York"])
        #expect(set.0 == 0 && set.1.contains("quiet hours for bob: 22:00 to 07:00 America/New_York"), "\(set)")
        let registry = try DeviceRegistry(path: data.path + "/server.sqlite")
        #expect(try registry.quietHours(person: "bob") == QuietHours(start: 22 * 60, end: 7 * 60, zone: "America/New_York"))
        let bad = try hpServer(["alert", "quiet", "--data", data.path, "--person", "bob", "--from", "22:00", "--to", "07:00", "--zone", "Mars/Olympus_Mons"])
        #expect(bad.0 != 0 && bad.2.contains("--zone must be an IANA time zone") && bad.2.contains("Mars/Olympus_Mons"), "\(bad)")
        #expect(try registry.quietHours(person: "bob")?.zone == "America/New_York", "unchanged")
        let utc = try hpServer(["alert", "quiet", "--data", data.path, "--person", "bob", "--from", "23:00", "--to", "06:00", "--json"])
        #expect(utc.0 == 0 && utc.1.contains("\"zone\"") && utc.1.contains("UTC"), "\(utc)")
        #expect(try hpServer(["alert", "quiet", "--data", data.path, "--person", "bob", "--clear"]).0 == 0)
        #expect(try registry.quietHours(person: "bob") == nil)
    }

    @Test("serve takes the alert thresholds from config.json: a value out of range stops it naming the key; disk_free_gib 1024 and disk_free_percent 50 fire disk_space_low in its first round")
    func serveThresholds() throws {
        let data = TempDir()
        #expect(try hpServer(["init", "--data", data.path]).0 == 0)
        let config = data.path + "/config.json"
        try #"{"alerts": {"certificate_warning_days": 400}}"#.write(toFile: config, atomically: true, encoding: .utf8)
        do {
            _ = try ServerProcess(data: data.path, timeout: 30)
            Issue.record("served with certificate_warning_days 400")
        } catch let e as ServerDidNotStart {
            #expect(e.stderr.contains(#""alerts.certificate_warning_days" must be a number from 1 to 365"#), "\(e)")
        }
        // Whether this machine's disk is under those thresholds (nearly every one is: less than 1 TiB or half free).
        let space = try #require(ServerConditions.fileSystemSpace(data.path))
        let low = space.free < 1024 << 30 || space.free * 2 < space.total
        try #"{"alerts": {"disk_free_gib": 1024, "disk_free_percent": 50}}"#.write(toFile: config, atomically: true, encoding: .utf8)
        let server = try ServerProcess(data: data.path)
        var fired = false
        let deadline = Date().addingTimeInterval(20)
        while !fired, deadline.timeIntervalSinceNow > 0 {
            fired = try hpServer(["alert", "list", "--data", data.path, "--json"]).1.contains("disk_space_low")
            if !fired { Thread.sleep(forTimeInterval: 0.5) }
        }
        #expect(fired == low, "free \(space.free) of \(space.total) bytes")
        withExtendedLifetime(server) {}
    }

    @Test("cadence: a chain's expected sync interval fixed in hours, then learned again; bad values refused; ack --fired-at acknowledges only the firing seen")
    func cadence() throws {
        let data = TempDir(), home = TempDir()
        #expect(try hpServer(["init", "--data", data.path]).0 == 0)
        #expect(try hpNode(["--home", home.path, "capture", "--simulate", "--seed", "3", "--days", "1"]).0 == 0)
        let server = try ServerProcess(data: data.path)
        try enrollWithCLI(data: data.path, home: home.path, name: "ann-phone", port: server.port)
        #expect(try hpNode(["--home", home.path, "sync"]).0 == 0)
        let chain = try nodeChain(home.path)
        let fixed = try hpServer(["alert", "cadence", "--data", data.path, "--chain", String(chain.prefix(8)), "--hours", "12"])
        #expect(fixed.0 == 0 && fixed.1.contains("silent after 12 h"), "\(fixed)")
        let registry = try DeviceRegistry(path: data.path + "/server.sqlite")
        #expect(try registry.learnCadence(chain: chain, lastSync: nil).override == 12 * 3600)
        #expect(try hpServer(["alert", "cadence", "--data", data.path, "--chain", String(chain.prefix(8)), "--learned"]).0 == 0)
        #expect(try registry.learnCadence(chain: chain, lastSync: nil).override == nil)
        let bad = try hpServer(["alert", "cadence", "--data", data.path, "--chain", String(chain.prefix(8)), "--hours", "0"])
        #expect(bad.0 != 0 && bad.2.contains("between 1 and 2160"))
        #expect(try hpServer(["alert", "cadence", "--data", data.path, "--chain", String(chain.prefix(8))]).2.contains("--hours H or --learned"))
        #expect(try hpServer(["alert", "cadence", "--data", data.path, "--chain", "ffffffff", "--hours", "5"]).0 != 0)

        // ack --fired-at: only the firing seen; one that fired again since is refused.
        #expect(try runTool("hp-server", ["person", "add", "ann", "--role", "admin", "--password-stdin", "--bcrypt-cost", "4", "--data", data.path],
                            stdin: "a-long-enough-password\n").0 == 0)
        let now = Date().timeIntervalSince1970
        try registry.recordRefusal(chain: chain, code: "divergent", detail: "bundle diverges", now: now)
        _ = try AlertService(registry: registry, sender: .shared, clock: ContinuousClock(), now: { now + 1 }, logger: Logger(label: "test.alerts")).evaluate()
        struct Listed: Decodable { let condition: String; let fired_at: Double? }
        let listed = try JSONDecoder().decode([Listed].self, from: Data(try hpServer(["alert", "list", "--data", data.path, "--json"]).1.utf8))
        let firedAt = try #require(listed.first { $0.condition == "refused" }?.fired_at)
        let target = ["--data", data.path, "--person", "ann", "--chain", String(chain.prefix(8)), "--condition", "refused"]
        let stale = try hpServer(["alert", "ack"] + target + ["--fired-at", "\(firedAt - 60)"])
        #expect(stale.0 != 0 && stale.2.contains("fired again"), "\(stale)")
        #expect(try hpServer(["alert", "ack"] + target + ["--fired-at", "nan"]).2.contains("--fired-at"))
        let acked = try hpServer(["alert", "ack"] + target + ["--fired-at", "\(firedAt)"])
        #expect(acked.0 == 0, "\(acked)")
        #expect(try registry.alertStates(for: nil).first { $0.condition == .refused }?.acknowledgedBy == "ann")
    }

    @Test("channel test delivers a test email through the config file's smtp settings (STARTTLS, AUTH PLAIN), and says why when they are missing",
          .enabled(if: SMTPTestServer.available, Comment(rawValue: SMTPTestServer.skipReason)))
    func emailTest() throws {
        let smtp = try SMTPTestServer()
        defer { smtp.stop() }
        let data = TempDir()
        #expect(try hpServer(["init", "--data", data.path]).0 == 0)
        #expect(try runTool("hp-server", ["person", "add", "ann", "--role", "admin", "--password-stdin", "--bcrypt-cost", "4", "--data", data.path],
                            stdin: "a-long-enough-password\n").0 == 0)
        #expect(try hpServer(["alert", "channel", "add", "--data", data.path, "--person", "ann", "--email", "ann@example.org"]).0 == 0)
        let missing = try hpServer(["alert", "channel", "test", "1", "--data", data.path, "--person", "ann"])
        #expect(missing.0 != 0 && missing.2.contains("smtp"), "\(missing)")
        let config: [String: Any] = ["smtp": ["host": "127.0.0.1", "port": smtp.port, "from": "healthprobe@example.org", "username": SMTPTestServer.username,
                                              "password": SMTPTestServer.password, "ca_file": smtp.certificatePath]]
        try JSONSerialization.data(withJSONObject: config).write(to: URL(fileURLWithPath: data.file("config.json")))
        let sent = try hpServer(["alert", "channel", "test", "1", "--data", data.path, "--person", "ann"])
        #expect(sent.0 == 0 && sent.1.contains("delivered test message"), "\(sent)")
        let got = try #require(try smtp.received().first)
        #expect(got.contains("X-TLS: yes") && got.contains("To: <ann@example.org>") && got.contains("this is a test of your HealthProbe alert channel."))
        try JSONSerialization.data(withJSONObject: ["smtp": ["host": "127.0.0.1", "from": "not an address"]]).write(to: URL(fileURLWithPath: data.file("config.json")))
        let bad = try hpServer(["alert", "channel", "test", "1", "--data", data.path, "--person", "ann"])
        #expect(bad.0 != 0 && bad.2.contains("smtp.from"), "\(bad)")
    }
}
