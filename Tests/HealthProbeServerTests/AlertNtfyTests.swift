import Foundation
import Logging
import NIOConcurrencyHelpers
import Testing
@testable import HealthProbeServer
import HealthProbeTestSupport

extension AlertTests {
    @Test("ntfy: a plain-text publish to the topic with Title, high Priority while firing, Click to the evidence page, the idempotency key; no values")
    func ntfy() async throws {
        let dir = TempDir()
        let receiver = AlertReceiver()
        try await receiver.start()
        let r = try DeviceRegistry(path: dir.path + "/server.sqlite")
        try r.addPerson(name: "bob", role: .member, password: nil, now: 1)
        try r.addAlertChannel(person: "bob", kind: .ntfy, target: "http://127.0.0.1:\(receiver.port)/bob-health", secret: nil, now: 1)
        let token = try r.issueToken(name: "bob-phone", person: try r.personForEnrollment("bob"), now: 1000)
        let (identity, _) = try r.redeem(name: "bob-phone", secret: token, now: 1001)
        _ = try r.claim(identity, chain: ownChain, now: 1002)
        try r.recordRefusal(chain: ownChain, code: "divergence", detail: "the device was reset", now: 1990)
        let alerts = service(r, time: NIOLockedValueBox(2000.0))
        #expect(try alerts.evaluate().queued == 1)
        #expect(try await sent(alerts) == [1, 0])
        let got = receiver.received.withLockedValue { $0 }
        #expect(got.count == 1)
        let m = try #require(got.first)
        #expect(m.path == "/bob-health")
        #expect(m.headers["content-type"]?.hasPrefix("text/plain") == true)
        #expect(m.headers["title"]?.contains("firing") == true, "\(m.headers)")
        #expect(m.headers["priority"] == "high")
        #expect(m.headers["click"] == "https://hp.example:8443/chains/\(ownChain)")
        #expect(m.headers["x-hp-idempotency-key"]?.isEmpty == false && m.headers["x-hp-signature"] == nil)
        #expect(m.body.contains("bob-phone") && m.body.contains("refused"), "\(m.body)")
        try await receiver.stop()
    }
}
