import AsyncHTTPClient
import Crypto
import Foundation
import NIOCore
import NIOHTTP1

/// Sends one outbox message on its channel: a signed JSON webhook or an ntfy publish.
/// Throws a value-free error on anything but a 2xx answer.
public struct AlertSender: Sendable {
    public struct Failure: Error, CustomStringConvertible {
        public var description: String
    }

    let client: HTTPClient
    let timeout: TimeAmount

    public init(client: HTTPClient, timeout: TimeAmount = .seconds(10)) {
        self.client = client
        self.timeout = timeout
    }

    /// A sender on the process-wide HTTP client.
    public static var shared: AlertSender { AlertSender(client: .shared) }

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
            throw Failure(description: "email delivery is not available yet: set up a webhook or ntfy channel")
        }
        let response = try await client.execute(request, timeout: timeout)
        // Drain at most a little of the answer; only the status matters.
        _ = try? await response.body.collect(upTo: 64 * 1024)
        guard (200..<300).contains(response.status.code) else {
            throw Failure(description: "the \(m.kind.rawValue) receiver answered HTTP \(response.status.code)")
        }
    }
}
