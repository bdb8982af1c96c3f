import Foundation
import Logging
import NIOConcurrencyHelpers
import Testing
@testable import HealthProbeServer
import HealthProbeNode
import HealthProbeProtocol
import HealthProbeTestSupport

/// *loss found* and *refused* end to end: a real node syncs over real TLS, the alert service
/// reads the replica, and a real signed-webhook receiver on 127.0.0.1 gets the messages.
@Suite("Alerts from real syncs")
struct AlertLossTests {
    /// Step records on three days; `without` leaves out one day's.
    static func export(date: String, without day: Int? = nil) throws -> (dir: TempDir, path: String) {
        var lines: [String] = []
        for d in 1...3 where d != day {
            for h in 0..<4 {
                lines.append("""
                 <Record type="HKQuantityTypeIdentifierStepCount" sourceName="Synthetic Phone" unit="count" startDate="2024-06-0\(d) 1\(h):00:00 +0000" endDate="2024-06-0\(d) 1\(h):10:00 +0000" value="\(98761 + h)"/>
                """)
            }
        }
        return try inlineExport(exportDate: date, lines.joined(separator: "\n"))
    }

    /// ann (admin), bob (member, owns the phone) and cat (member, may not read it), each with
    /// a webhook channel to `receiver`; returns the secrets by person.
    static func people(_ registry: DeviceRegistry, _ receiver: AlertReceiver) throws -> [String: String] {
        var secrets: [String: String] = [:]
        for (n, role) in [("ann", People.Role.admin), ("bob", .member), ("cat", .member)] {
            try registry.addPerson(name: n, role: role, password: nil, now: 1)
            let secret = "secret-of-\(n)-0123456789"
            try registry.addAlertChannel(person: n, kind: .webhook, target: "http://127.0.0.1:\(receiver.port)/\(n)", secret: secret, now: 1)
            secrets[n] = secret
        }
        return secrets
    }

    /// One delivery pass: [delivered, failed].
    static func sent(_ alerts: AlertService<ContinuousClock>) async throws -> [Int] {
        let r = try await alerts.deliver()
        return [r.delivered, r.failed]
    }

    @Test("a node syncs an export lacking some records: one loss_found message each to the owner and an admin, none to cat; acknowledged, it resolves; a divergent bundle fires refused")
    func lossFromRealSync() async throws {
        let data = TempDir()
        let home = TempHome()
        let receiver = AlertReceiver()
        try await receiver.start()
        try await withServer(data) { server in
            let registry = try server.store.registry()
            let secrets = try Self.people(registry, receiver)
            let e = try await server.enroll("bob-phone", person: "bob")
            let time = NIOLockedValueBox(Date().timeIntervalSince1970)
            var settings = AlertService<ContinuousClock>.Settings()
            settings.pageBase = "https://hp.example:8443"
            let alerts = AlertService(registry: registry, sender: .shared, settings: settings, clock: ContinuousClock(), now: { time.withLockedValue { $0 } },
                                      logger: Logger(label: "test.alerts"), lossScan: LossScan(store: server.store))

            let first = try Self.export(date: "2024-06-04 09:00:00 +0000")
            try importExport(home, first.path)
            _ = try await SyncClient(node: try home.open(), outbox: home.root + "/outbox").sync(e)
            let chain = try home.open().deviceChainHash
            #expect(try alerts.evaluate().events.isEmpty, "a first observation has nothing to lose")

            let second = try Self.export(date: "2024-06-05 09:00:00 +0000", without: 2)
            try importExport(home, second.path)
            _ = try await SyncClient(node: try home.open(), outbox: home.root + "/outbox").sync(e)
            let round = try alerts.evaluate()
            #expect(round.events.map(\.condition) == [.lossFound] && round.events.map(\.event) == [.fired])
            #expect(round.queued == 2)
            #expect(try await Self.sent(alerts) == [2, 0])
            #expect(try alerts.evaluate().events.isEmpty, "the same loss does not fire twice")

            let got = try AlertTests().checkedDeliveries(receiver, secrets: secrets)
            #expect(got["ann"]?.count == 1 && got["bob"]?.count == 1)
            #expect(!got.keys.contains("cat"))
            let event = try #require((got["bob"]?.first?["events"] as? [[String: Any]])?.first)
            #expect(event["condition"] as? String == "loss_found")
            #expect(event["device"] as? String == "bob-phone")
            #expect(event["link"] as? String == "https://hp.example:8443/chains/\(chain)/observations/2")
            let detail = try #require(event["detail"] as? String)
            #expect(detail == "loss in observation 2: Steps: 4 records lost", "\(detail)")
            // No values in what left the server (the words of each event and the subject).
            for m in got.values.flatMap({ $0 }) {
                let words = ((m["events"] as? [[String: Any]]) ?? []).compactMap { $0["detail"] as? String } + [m["subject"] as? String ?? ""]
                #expect(!words.joined().contains("9876"))
            }

            // Acknowledged (a person looked): resolved, told once more each.
            let bob = try #require(try registry.person(named: "bob"))
            try registry.acknowledgeAlert(chain: chain, condition: .lossFound, person: bob, now: time.withLockedValue { $0 } + 1)
            time.withLockedValue { $0 += 60 }
            #expect(try alerts.evaluate().events.map(\.event) == [.resolved])
            #expect(try await Self.sent(alerts) == [2, 0])
            time.withLockedValue { $0 += 60 }
            #expect(try alerts.evaluate().events.isEmpty, "an acknowledged loss stays resolved")

            // The app reinstalled: its first observation again is divergence, refused, and the alert says so.
            try home.home.reset(newChain: false)
            try importExport(home, first.path)
            let node = try home.open()
            let (lines, hash) = try bundleLines(node, 1, previous: nil)
            let reply = try await server.raw(try wire([try authFrame(e), try .json(.chainStatusRequest, .object(["device_chain_hash": .string(chain)]))]
                                                      + ChainBindingTests.bundleFrames(lines, hash: hash)), until: "\"sequence\"")
            #expect(String(decoding: reply, as: UTF8.self).contains("divergence"))
            time.withLockedValue { $0 = Date().timeIntervalSince1970 + 1 }
            let refused = try alerts.evaluate()
            #expect(refused.events.map(\.condition) == [.refused] && refused.queued == 2)
            #expect(try await Self.sent(alerts) == [2, 0])
            let all = try AlertTests().checkedDeliveries(receiver, secrets: secrets)
            #expect(all["bob"]?.count == 3 && all["ann"]?.count == 3 && !all.keys.contains("cat"))
        }
        try await receiver.stop()
    }

    @Test("an acknowledgement names the firing it saw: a new loss that fired again since is not acknowledged unseen (conflict); the firing shown then is")
    func acknowledgementNamesItsFiring() throws {
        let data = TempDir()
        let r = try DeviceRegistry(path: data.path + "/server.sqlite")
        try r.addPerson(name: "ann", role: .admin, password: nil, now: 1, cost: 4)
        let ann = try #require(try r.person(named: "ann"))
        let chain = String(repeating: "c", count: 64)
        let loss = { (detail: String) in [AlertFinding(chain: chain, condition: .lossFound, detail: detail, page: "/chains/\(chain)")] }
        _ = try r.applyAlertRound(findings: loss("2 records"), chains: [chain], evaluated: [.lossFound], now: 100)
        let shown = try #require(try r.alertStates(for: ann).first { $0.condition == .lossFound }?.firedAt)
        // A new loss is found and fires again before the acknowledgement of the one shown arrives.
        try r.recordLossScan(chain: chain, through: 3, loss: (observation: 3, detail: "5 records", page: "/chains/\(chain)/observations/3"), now: 150)
        _ = try r.applyAlertRound(findings: loss("5 records"), chains: [chain], evaluated: [.lossFound], now: 200)
        let again = try #require(try r.alertStates(for: ann).first { $0.condition == .lossFound })
        #expect(again.state == "firing" && again.firedAt == 200 && shown == 100)
        #expect { try r.acknowledgeAlert(chain: chain, condition: .lossFound, person: ann, now: 201, firedAt: shown) } throws: { error in
            (error as? DeviceRegistry.AuthError)?.code == .conflict && "\(error)".contains("fired again")
        }
        #expect(try r.alertStates(for: ann).first { $0.condition == .lossFound }?.acknowledgedAt == nil)
        try r.acknowledgeAlert(chain: chain, condition: .lossFound, person: ann, now: 202, firedAt: again.firedAt)
        #expect(try r.alertStates(for: ann).first { $0.condition == .lossFound }?.acknowledgedBy == "ann")
    }

    @Test("the loss scan classifies 20 observations a chain for each minute between rounds, from 20 to 100")
    func lossScanLimit() {
        #expect(LossScan.limit(roundSeconds: 5) == 20 && LossScan.limit(roundSeconds: 60) == 20)
        #expect(LossScan.limit(roundSeconds: 90) == 30 && LossScan.limit(roundSeconds: 300) == 100 && LossScan.limit(roundSeconds: 3600) == 100)
        #expect(LossScan.limit(roundSeconds: .infinity) == 20 && LossScan.limit(roundSeconds: .nan) == 20)
    }
}
