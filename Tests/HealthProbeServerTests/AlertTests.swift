import Foundation
import GRDB
import Logging
import NIOConcurrencyHelpers
import Testing
@testable import HealthProbeServer
import HealthProbeTestSupport

/// Alerts end to end below the web: registry state and outbox, the evaluator with an
/// injected clock, and delivery to a real signed-webhook receiver on 127.0.0.1.
@Suite("Alerts")
struct AlertTests {
    let ownChain = String(repeating: "b", count: 64)

    /// A household: ann (admin), bob (member, owns the chain), cat (member, may not read it);
    /// each with a webhook channel to `receiver`, the path naming the person.
    func household(_ dir: TempDir, receiver: AlertReceiver) throws -> (DeviceRegistry, [String: String]) {
        let r = try DeviceRegistry(path: dir.path + "/server.sqlite")
        var secrets: [String: String] = [:]
        for (n, role) in [("ann", People.Role.admin), ("bob", .member), ("cat", .member)] {
            try r.addPerson(name: n, role: role, password: nil, now: 1)
            let secret = "secret-of-\(n)-0123456789"
            try r.addAlertChannel(person: n, kind: .webhook, target: "http://127.0.0.1:\(receiver.port)/\(n)", secret: secret, now: 1)
            secrets[n] = secret
        }
        let token = try r.issueToken(name: "bob-phone", person: try r.personForEnrollment("bob"), now: 1000)
        let (identity, _) = try r.redeem(name: "bob-phone", secret: token, now: 1001)
        _ = try r.claim(identity, chain: ownChain, now: 1002)
        return (r, secrets)
    }

    func service(_ r: DeviceRegistry, time: NIOLockedValueBox<Double>, cadence: Double = 3600, grace: Double = 600,
                 metrics: ServerMetrics? = nil) -> AlertService<ContinuousClock> {
        var s = AlertService<ContinuousClock>.Settings()
        s.conditions = AlertConditions(defaultCadence: cadence, grace: grace)
        s.pageBase = "https://hp.example:8443"
        return AlertService(registry: r, sender: .shared, settings: s, clock: ContinuousClock(), now: { time.withLockedValue { $0 } },
                            logger: Logger(label: "test.alerts"), metrics: metrics)
    }

    /// One delivery pass: [delivered, failed].
    func sent(_ alerts: AlertService<ContinuousClock>) async throws -> [Int] {
        let r = try await alerts.deliver()
        return [r.delivered, r.failed]
    }

    /// Every request the receiver got carries a valid signature; returns them per person.
    func checkedDeliveries(_ receiver: AlertReceiver, secrets: [String: String]) throws -> [String: [[String: Any]]] {
        var out: [String: [[String: Any]]] = [:]
        for m in receiver.received.withLockedValue({ $0 }) {
            let person = String(m.path.dropFirst())
            let secret = try #require(secrets[person])
            #expect(m.headers["x-hp-signature"] == AlertSender.signature(body: m.body, secret: secret))
            #expect(m.headers["x-hp-signature"] != AlertSender.signature(body: m.body + " ", secret: secret))
            let json = try #require(try JSONSerialization.jsonObject(with: Data(m.body.utf8)) as? [String: Any])
            #expect(json["key"] as? String == m.headers["x-hp-idempotency-key"])
            out[person, default: []].append(json)
        }
        return out
    }

    @Test("a refused bundle tells the owner and an admin once each, not a person who may not read the chain; resolves on a good sync")
    func refusedToReaders() async throws {
        let dir = TempDir()
        let receiver = AlertReceiver()
        try await receiver.start()
        let (r, secrets) = try household(dir, receiver: receiver)
        let time = NIOLockedValueBox(2000.0)
        let metrics = ServerMetrics()
        let alerts = service(r, time: time, metrics: metrics)
        try r.recordSync(chain: ownChain, now: 1500, clockOffset: nil)
        try r.recordRefusal(chain: ownChain, code: "divergent", detail: "bundle 7 diverges from the stored chain", now: 1990)
        let round = try alerts.evaluate()
        #expect(round.events.map(\.condition) == [.refused])
        #expect(round.queued == 2)
        #expect(try await sent(alerts) == [2, 0])
        #expect(try await sent(alerts) == [0, 0])
        let got = try checkedDeliveries(receiver, secrets: secrets)
        #expect(got["ann"]?.count == 1)
        #expect(got["bob"]?.count == 1)
        #expect(!got.keys.contains("cat"))
        let event = try #require((got["bob"]?.first?["events"] as? [[String: Any]])?.first)
        #expect(event["condition"] as? String == "refused")
        #expect(event["device"] as? String == "bob-phone")
        #expect(event["link"] as? String == "https://hp.example:8443/chains/\(ownChain)")
        // The same finding next round: no second message (reminders wait an hour).
        time.withLockedValue { $0 = 2060 }
        #expect(try alerts.evaluate().events.isEmpty)
        // A good sync after the refusal resolves it: one message each again.
        try r.recordSync(chain: ownChain, now: 2100, clockOffset: nil)
        time.withLockedValue { $0 = 2120 }
        #expect(try alerts.evaluate().events.map(\.event) == [.resolved])
        #expect(try await sent(alerts) == [2, 0])
        #expect(try r.alertStates(for: nil).first?.state == "resolved")
        let text = metrics.text()
        #expect(text.contains(#"hp_server_alert_deliveries_total{result="delivered"} 4"#))
        #expect(text.contains(#"hp_server_alert_events_total{event="fired"} 1"#))
        #expect(text.contains("hp_server_alert_evaluations_total 3"))
        try await receiver.stop()
    }

    @Test("silent after the cadence plus grace on the injected clock, then resolved when the device syncs again")
    func silentThenResolved() async throws {
        let dir = TempDir()
        let receiver = AlertReceiver()
        try await receiver.start()
        let (r, secrets) = try household(dir, receiver: receiver)
        let time = NIOLockedValueBox(10_000.0)
        let alerts = service(r, time: time, cadence: 3600, grace: 600)
        try r.recordSync(chain: ownChain, now: 10_000, clockOffset: nil)
        #expect(try alerts.evaluate().events.isEmpty)
        time.withLockedValue { $0 = 10_000 + 3600 + 600 }
        #expect(try alerts.evaluate().events.isEmpty, "exactly at the limit is not yet silent")
        time.withLockedValue { $0 = 10_000 + 3600 + 601 }
        let fired = try alerts.evaluate()
        #expect(fired.events.map(\.condition) == [.silent])
        #expect(fired.events.map(\.event) == [.fired])
        try r.recordSync(chain: ownChain, now: 15_000, clockOffset: nil)
        time.withLockedValue { $0 = 15_010 }
        #expect(try alerts.evaluate().events.map(\.event) == [.resolved])
        #expect(try await sent(alerts) == [4, 0])
        let got = try checkedDeliveries(receiver, secrets: secrets)
        #expect(got["bob"]?.count == 2 && got["ann"]?.count == 2 && !got.keys.contains("cat"))
        // The learned cadence: one interval of 5000 s seen, so silence now waits 5000 + 600 s.
        time.withLockedValue { $0 = 15_000 + 5000 + 500 }
        #expect(try alerts.evaluate().events.isEmpty)
        try await receiver.stop()
    }

    @Test("receiver down for a while: retried with backoff and delivered later exactly once")
    func receiverDown() async throws {
        let dir = TempDir()
        let receiver = AlertReceiver()
        try await receiver.start()
        let (r, secrets) = try household(dir, receiver: receiver)
        let time = NIOLockedValueBox(2000.0)
        let alerts = service(r, time: time)
        try r.recordRefusal(chain: ownChain, code: "out_of_order", detail: "sequence gap", now: 1990)
        receiver.down.withLockedValue { $0 = true }
        #expect(try alerts.evaluate().queued == 2)
        #expect(try await sent(alerts) == [0, 2])
        #expect(try await sent(alerts) == [0, 0], "not retried before the backoff")
        let waiting = try r.alertOutbox()
        #expect(waiting.allSatisfy { $0.attempts == 1 && $0.nextAttemptAt == 2030 && $0.lastError?.contains("503") == true })
        time.withLockedValue { $0 = 2030 }
        #expect(try await sent(alerts) == [0, 2])
        #expect(try r.alertOutbox().allSatisfy { $0.nextAttemptAt == 2090 }, "the second wait doubles")
        receiver.down.withLockedValue { $0 = false }
        time.withLockedValue { $0 = 2090 }
        #expect(try await sent(alerts) == [2, 0])
        time.withLockedValue { $0 = 9000 }
        #expect(try await sent(alerts) == [0, 0])
        let got = try checkedDeliveries(receiver, secrets: secrets)
        #expect(got["ann"]?.count == 1 && got["bob"]?.count == 1)
        try await receiver.stop()
    }

    @Test("a restart with messages in the outbox delivers each once")
    func restartKeepsOutbox() async throws {
        let dir = TempDir()
        let receiver = AlertReceiver()
        try await receiver.start()
        let time = NIOLockedValueBox(2000.0)
        let secrets: [String: String]
        do {
            let (r, s) = try household(dir, receiver: receiver)
            secrets = s
            try r.recordRefusal(chain: ownChain, code: "invalid", detail: "bad signature", now: 1990)
            #expect(try service(r, time: time).evaluate().queued == 2)
        }
        // A new process: the registry reopened from the same file.
        let reopened = try DeviceRegistry(path: dir.path + "/server.sqlite")
        let alerts = service(reopened, time: time)
        #expect(try alerts.evaluate().events.isEmpty, "the state survived: no second firing")
        #expect(try await sent(alerts) == [2, 0])
        #expect(try await sent(alerts) == [0, 0])
        let got = try checkedDeliveries(receiver, secrets: secrets)
        #expect(got["ann"]?.count == 1 && got["bob"]?.count == 1)
        try await receiver.stop()
    }

    @Test("reminders back off while firing; snoozed and acknowledged alerts stay quiet")
    func remindersSnoozeAck() async throws {
        let dir = TempDir()
        let receiver = AlertReceiver()
        try await receiver.start()
        let (r, _) = try household(dir, receiver: receiver)
        let time = NIOLockedValueBox(2000.0)
        let alerts = service(r, time: time)
        try r.recordRefusal(chain: ownChain, code: "divergent", detail: "", now: 1990)
        #expect(try alerts.evaluate().events.map(\.event) == [.fired])
        time.withLockedValue { $0 = 2000 + 3599 }
        #expect(try alerts.evaluate().events.isEmpty)
        time.withLockedValue { $0 = 2000 + 3600 }
        #expect(try alerts.evaluate().events.map(\.event) == [.reminder])
        time.withLockedValue { $0 = 5600 + 7199 }
        #expect(try alerts.evaluate().events.isEmpty, "the second reminder waits twice as long")
        let bob = try #require(try r.person(named: "bob"))
        let cat = try #require(try r.person(named: "cat"))
        #expect(throws: DeviceRegistry.AuthError.self) { try r.snoozeAlert(chain: ownChain, condition: .refused, person: cat, until: 1e9) }
        try r.snoozeAlert(chain: ownChain, condition: .refused, person: bob, until: 50_000)
        time.withLockedValue { $0 = 40_000 }
        #expect(try alerts.evaluate().events.isEmpty, "snoozed")
        time.withLockedValue { $0 = 50_001 }
        #expect(try alerts.evaluate().events.map(\.event) == [.reminder], "the snooze ended")
        try r.acknowledgeAlert(chain: ownChain, condition: .refused, person: bob, now: 50_002)
        time.withLockedValue { $0 = 500_000 }
        #expect(try alerts.evaluate().events.isEmpty, "acknowledged")
        #expect(try r.alertStates(for: cat).isEmpty)
        #expect(try r.alertStates(for: bob).first?.acknowledgedBy == "bob")
        #expect(try r.audit().map(\.action).filter { $0 == .alertAck || $0 == .alertSnooze } == [.alertAck, .alertSnooze])
        try await receiver.stop()
    }

    @Test("quiet hours delay delivery, not evaluation; the message goes out when they end")
    func quietHours() async throws {
        let dir = TempDir()
        let receiver = AlertReceiver()
        try await receiver.start()
        let (r, secrets) = try household(dir, receiver: receiver)
        #expect(QuietHours(start: 0, end: 1440) == nil)
        try r.setQuietHours(person: "bob", try #require(QuietHours(start: 0, end: 60)))
        let overnight = try #require(QuietHours(start: 22 * 60, end: 7 * 60))
        let ends: Double? = overnight.end(after: 82_800)
        #expect(ends == 111_600.0, "23:00 in a 22:00-07:00 window ends at 07:00 the next day")
        let time = NIOLockedValueBox(2000.0)
        let alerts = service(r, time: time)
        try r.recordRefusal(chain: ownChain, code: "divergent", detail: "", now: 1990)
        #expect(try alerts.evaluate().queued == 2, "evaluated and queued during quiet hours")
        #expect(try await sent(alerts) == [1, 0])
        #expect(try !checkedDeliveries(receiver, secrets: secrets).keys.contains("bob"))
        time.withLockedValue { $0 = 3599 }
        #expect(try await sent(alerts) == [0, 0])
        time.withLockedValue { $0 = 3600 }
        #expect(try await sent(alerts) == [1, 0])
        let got = try checkedDeliveries(receiver, secrets: secrets)
        #expect(got["bob"]?.count == 1 && got["ann"]?.count == 1)
        #expect(try r.alertOutbox().allSatisfy { $0.attempts == 1 })
        try await receiver.stop()
    }

    @Test("a failed verification fires verification_failed; a passing one resolves it")
    func verificationFailed() async throws {
        let dir = TempDir()
        let receiver = AlertReceiver()
        try await receiver.start()
        let (r, _) = try household(dir, receiver: receiver)
        let time = NIOLockedValueBox(2000.0)
        let alerts = service(r, time: time)
        try r.recordVerification(.init(chain: ownChain, checkedAt: 1995, mode: "quick", ok: false, bundles: 3, problems: ["links: bundle 2 does not follow 1"]))
        let fired = try alerts.evaluate().events
        #expect(fired.map(\.condition) == [.verificationFailed])
        #expect(fired.first?.detail == "quick verification found 1 problem")
        try r.recordVerification(.init(chain: ownChain, checkedAt: 2050, mode: "full", ok: true, bundles: 3, problems: []))
        time.withLockedValue { $0 = 2060 }
        #expect(try alerts.evaluate().events.map(\.event) == [.resolved])
        try await receiver.stop()
    }

    @Test("channels: targets checked, secrets shown only as a hint, removal per person")
    func channels() throws {
        let dir = TempDir()
        let r = try DeviceRegistry(path: dir.path + "/server.sqlite")
        try r.addPerson(name: "ann", role: .admin, password: nil, now: 1)
        try r.addPerson(name: "bob", role: .member, password: nil, now: 1)
        #expect(throws: DeviceRegistry.AuthError.self) { try r.addAlertChannel(person: "ann", kind: .webhook, target: "ftp://x", now: 1) }
        #expect(throws: DeviceRegistry.AuthError.self) { try r.addAlertChannel(person: "ann", kind: .email, target: "ann@\r\nexample.org", now: 1) }
        #expect(throws: DeviceRegistry.AuthError.self) { try r.addAlertChannel(person: "ann", kind: .webhook, target: "https://h/x", secret: "short", now: 1) }
        #expect(throws: DeviceRegistry.AuthError.self) { try r.addAlertChannel(person: "ann", kind: .webhook, target: "https://h/x", secret: "sixteen chars\u{1B}long-enough", now: 1) }
        #expect(throws: DeviceRegistry.AuthError.self) { try r.addAlertChannel(person: "ann", kind: .webhook, target: "https://h/x", secret: "ünïcode-secret-of-twenty", now: 1) }
        let hook = try r.addAlertChannel(person: "ann", kind: .webhook, target: "https://hooks.example/x", secret: "0123456789abcdefWXYZ", now: 1)
        #expect(hook.secretHint == "…WXYZ")
        #expect(throws: DeviceRegistry.AuthError.self) { try r.addAlertChannel(person: "ann", kind: .webhook, target: "https://hooks.example/x", now: 1) }
        try r.addAlertChannel(person: "ann", kind: .email, target: "ann@example.org", now: 1)
        #expect(try r.alertChannels(person: "ann").count == 2)
        #expect(throws: DeviceRegistry.AuthError.self) { try r.removeAlertChannel(id: hook.id, person: "bob") }
        try r.removeAlertChannel(id: hook.id, person: "ann")
        #expect(try r.alertChannels().map(\.kind) == [.email])
    }
}
