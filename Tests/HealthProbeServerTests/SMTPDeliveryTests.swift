import Foundation
import Testing
@testable import HealthProbeServer
import HealthProbeTestSupport
import Logging

/// Alert email delivered to a real SMTP server (aiosmtpd) on 127.0.0.1 with STARTTLS required.
@Suite("SMTP delivery", .enabled(if: SMTPTestServer.available, Comment(rawValue: SMTPTestServer.skipReason)))
struct SMTPDeliveryTests {
    func settings(_ server: SMTPTestServer, ca: String? = nil) -> SMTPSettings {
        SMTPSettings(host: "127.0.0.1", port: server.port, from: "healthprobe@example.org", username: SMTPTestServer.username,
                     password: SMTPTestServer.password, caFile: ca ?? server.certificatePath, timeoutSeconds: 20)
    }

    @Test("a test message and an alert from the outbox by email over STARTTLS with AUTH PLAIN: plain text, dot-stuffed lines restored")
    func alertEmail() async throws {
        let server = try SMTPTestServer()
        defer { server.stop() }
        let dir = TempDir()
        let r = try DeviceRegistry(path: dir.path + "/server.sqlite")
        try r.addPerson(name: "ann", role: .admin, password: nil, now: 1)
        let channel = try r.addAlertChannel(person: "ann", kind: .email, target: "ann@example.org", now: 1)
        let m = try r.alertTestMessage(channelID: channel.id, person: "ann", now: 1)
        try await AlertSender.shared(smtp: settings(server)).send(m)
        let got = try #require(try server.received().first)
        #expect(got.contains("X-Envelope-From: healthprobe@example.org\r\n") && got.contains("X-Envelope-To: ann@example.org\r\n"))
        #expect(got.contains("X-TLS: yes\r\n"), "delivered inside TLS")
        #expect(got.contains("Subject: HealthProbe: test\r\n") && got.contains("Content-Type: text/plain; charset=utf-8\r\n"))
        #expect(got.contains("this is a test of your HealthProbe alert channel."))

        // An alert, through the outbox: the service delivers it by email.
        let chain = String(repeating: "c", count: 64)
        let token = try r.issueToken(name: "ann-phone", person: try r.personForEnrollment("ann"), now: 1)
        _ = try r.claim(try r.redeem(name: "ann-phone", secret: token, now: 2).0, chain: chain, now: 3)
        try r.recordRefusal(chain: chain, code: "divergence", detail: "bundle 2 diverges", now: 10)
        var s = AlertService<ContinuousClock>.Settings()
        s.pageBase = "https://hp.example:8443"
        let alerts = AlertService(registry: r, sender: .shared(smtp: settings(server)), settings: s, clock: ContinuousClock(), now: { 20 },
                                  logger: Logger(label: "test.alerts"))
        #expect(try alerts.evaluate().queued == 1)
        let sent = try await alerts.deliver()
        #expect(sent.delivered == 1 && sent.failed == 0)
        let alert = try #require(try server.received(count: 2).last)
        #expect(alert.contains("Subject: HealthProbe: 1 alert firing\r\n") && alert.contains("- refused fired: ann-phone, chain cccccccccccc"))
        #expect(alert.contains("  evidence: https://hp.example:8443/chains/\(chain)\r\n"))
        #expect(try r.alertOutbox().allSatisfy { $0.deliveredAt == 20 })

        // A body line that is a lone dot arrives as a dot, not as the end of the data.
        let body = "line one\n.\n..two dots\nlast"
        let message = SMTPMessage.plainText(from: "healthprobe@example.org", to: "bob@example.org", subject: "dots", body: body, date: Date(), messageID: "x1")
        try await SMTPClient(settings: settings(server)).send(to: ["bob@example.org"], message: message)
        let second = try #require(try server.received(count: 3).last)
        #expect(second.hasSuffix("\r\nline one\r\n.\r\n..two dots\r\nlast\r\n"), "\(second.suffix(80))")
    }

    @Test("implicit TLS (smtp.tls \"implicit\", as on port 465): AUTH PLAIN and the message inside TLS from the first byte; a mismatched mode or an untrusted certificate is not delivered")
    func implicitTLS() async throws {
        let server = try SMTPTestServer(implicit: true)
        defer { server.stop() }
        var s = settings(server)
        s.tls = .implicit
        let message = SMTPMessage.plainText(from: "healthprobe@example.org", to: "ann@example.org", subject: "over 465", body: "body line", date: Date(), messageID: "i1")
        try await SMTPClient(settings: s).send(to: ["ann@example.org"], message: message)
        let got = try #require(try server.received().first)
        #expect(got.contains("X-TLS: yes\r\n") && got.contains("X-Envelope-To: ann@example.org\r\n") && got.contains("Subject: over 465\r\n"), "\(got)")

        // Through the alert sender, as the outbox delivers: a test message.
        let dir = TempDir()
        let r = try DeviceRegistry(path: dir.path + "/server.sqlite")
        try r.addPerson(name: "ann", role: .admin, password: nil, now: 1)
        let channel = try r.addAlertChannel(person: "ann", kind: .email, target: "ann@example.org", now: 1)
        try await AlertSender.shared(smtp: s).send(try r.alertTestMessage(channelID: channel.id, person: "ann", now: 1))
        #expect(try server.received(count: 2).last?.contains("Subject: HealthProbe: test\r\n") == true)

        // A STARTTLS client waits for a greeting the SMTPS server never sends in plain text: its timeout ends it.
        var starttls = settings(server)
        starttls.timeoutSeconds = 2
        await #expect(throws: (any Error).self) { try await SMTPClient(settings: starttls).send(to: ["a@example.org"], message: message) }
        // An implicit client to a STARTTLS server: the plain greeting is no TLS handshake.
        let plainFirst = try SMTPTestServer()
        defer { plainFirst.stop() }
        var wrongMode = settings(plainFirst)
        wrongMode.tls = .implicit
        await #expect(throws: (any Error).self) { try await SMTPClient(settings: wrongMode).send(to: ["a@example.org"], message: message) }
        // A certificate not trusted.
        let other = TempDir()
        try SMTPTestServer.selfSigned(certificate: other.file("c.pem"), key: other.file("k.pem"))
        var untrusted = settings(server, ca: other.file("c.pem"))
        untrusted.tls = .implicit
        await #expect(throws: (any Error).self) { try await SMTPClient(settings: untrusted).send(to: ["a@example.org"], message: message) }
        #expect(try server.received(count: 3, within: 0.5).count == 2 && plainFirst.received(count: 1, within: 0.5).isEmpty)
    }

    @Test("a certificate not trusted, a wrong password, or a server without STARTTLS: not delivered, with a reason")
    func refusals() async throws {
        let server = try SMTPTestServer()
        defer { server.stop() }
        let other = TempDir()
        try SMTPTestServer.selfSigned(certificate: other.file("c.pem"), key: other.file("k.pem"))
        let message = SMTPMessage.plainText(from: "healthprobe@example.org", to: "a@example.org", subject: "s", body: "b", date: Date(), messageID: "x")
        await #expect(throws: (any Error).self) { try await SMTPClient(settings: settings(server, ca: other.file("c.pem"))).send(to: ["a@example.org"], message: message) }
        var wrong = settings(server)
        wrong.password = "not-the-password"
        do {
            try await SMTPClient(settings: wrong).send(to: ["a@example.org"], message: message)
            Issue.record("delivered with a wrong password")
        } catch {
            #expect("\(error)".contains("authentication failed") && "\(error)".contains("535"), "\(error)")
            #expect(!"\(error)".contains("not-the-password"))
        }
        let plain = try SMTPTestServer(starttls: false)
        defer { plain.stop() }
        do {
            try await SMTPClient(settings: settings(plain)).send(to: ["a@example.org"], message: message)
            Issue.record("delivered without TLS")
        } catch {
            #expect("\(error)".contains("STARTTLS"), "\(error)")
        }
        #expect(try server.received(count: 1, within: 0.5).isEmpty && plain.received(count: 1, within: 0.5).isEmpty)
    }
}
