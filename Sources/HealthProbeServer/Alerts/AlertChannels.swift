import AsyncHTTPClient
import Crypto
import Foundation
import NIOCore
import NIOHTTP1

/// Sends one outbox message on its channel: a signed JSON webhook, an ntfy publish, or a
/// plain-text email over SMTP with STARTTLS. Throws a value-free error on anything but success.
public struct AlertSender: Sendable {
    public struct Failure: Error, CustomStringConvertible {
        public var description: String
    }

    let client: HTTPClient
    let timeout: TimeAmount
    /// How email goes out (the config file's `smtp`); nil: email channels fail with a reason.
    let smtp: SMTPSettings?

    public init(client: HTTPClient, timeout: TimeAmount = .seconds(10), smtp: SMTPSettings? = nil) {
        self.client = client
        self.timeout = timeout
        self.smtp = smtp
    }

    /// A sender on the process-wide HTTP client, without email.
    public static var shared: AlertSender { AlertSender(client: .shared) }

    /// A sender on the process-wide HTTP client, with email through `smtp` when set.
    public static func shared(smtp: SMTPSettings?) -> AlertSender { AlertSender(client: .shared, smtp: smtp) }

    /// The `X-HP-Signature` of `body`: lower-case hex HMAC-SHA256 with the channel's secret.
    public static func signature(body: String, secret: String) -> String {
        HMAC<SHA256>.authenticationCode(for: Data(body.utf8), using: SymmetricKey(data: Data(secret.utf8)))
            .map { String(format: "%02x", $0) }.joined()
    }

    public func send(_ m: DeviceRegistry.OutboxMessage) async throws {
        var request = HTTPClientRequest(url: m.target)
        request.method = .POST
        request.headers.add(name: "X-HP-Idempotency-Key", value: m.key)
        request.headers.add(name: "User-Agent", value: "healthprobe-alerts")
        switch m.kind {
        case .webhook:
            request.headers.add(name: "Content-Type", value: "application/json")
            request.headers.add(name: "X-HP-Signature", value: Self.signature(body: m.json, secret: m.secret ?? ""))
            request.body = .bytes(ByteBuffer(string: m.json))
        case .ntfy:
            request.headers.add(name: "Title", value: m.subject)
            request.headers.add(name: "Priority", value: m.subject.contains("firing") ? "high" : "default")
            if let link = m.text.split(separator: "\n").first(where: { $0.hasPrefix("  evidence: ") }) {
                request.headers.add(name: "Click", value: String(link.dropFirst("  evidence: ".count)))
            }
            request.headers.add(name: "Content-Type", value: "text/plain; charset=utf-8")
            request.body = .bytes(ByteBuffer(string: m.text))
        case .email:
            return try await email(m)
        }
        let response = try await client.execute(request, timeout: timeout)
        // Drain at most a little of the answer; only the status matters.
        _ = try? await response.body.collect(upTo: 64 * 1024)
        guard (200..<300).contains(response.status.code) else {
            throw Failure(description: "the \(m.kind.rawValue) receiver answered HTTP \(response.status.code)")
        }
    }

    /// The message as a plain-text email to the channel's address.
    func email(_ m: DeviceRegistry.OutboxMessage) async throws {
        guard let smtp else {
            throw Failure(description: "email needs the \"smtp\" settings in the server's config file (docs/alerts.md)")
        }
        let message = SMTPMessage.plainText(from: smtp.from, to: m.target, subject: m.subject, body: m.text, date: Date(), messageID: m.key)
        try await SMTPClient(settings: smtp).send(to: [m.target], message: message)
    }
}
