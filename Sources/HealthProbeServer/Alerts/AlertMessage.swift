import Foundation
import HealthProbeCanonical

/// The message one person gets for one evaluation round: device, condition, times and a
/// link to the evidence page. Never health values.
public struct AlertMessage: Sendable {
    public var person: String
    public var events: [AlertEvent]
    public var subject: String
    public var text: String
    var links: [String: String]

    public init(person: String, events: [AlertEvent], now: Double, link: (String) -> String?) {
        self.person = person
        self.events = events
        let fired = events.filter { $0.event != .resolved }.count
        let resolved = events.count - fired
        subject = "HealthProbe: " + [fired > 0 ? "\(fired) alert\(fired == 1 ? "" : "s") firing" : nil,
                                     resolved > 0 ? "\(resolved) resolved" : nil].compactMap { $0 }.joined(separator: ", ")
        var links: [String: String] = [:]
        var lines = ["Hello \(person),", ""]
        for e in events {
            let device = e.device ?? "an unowned device"
            var line = "- \(e.condition.rawValue) \(e.event.rawValue): \(device), chain \(e.chain.prefix(12)), at \(CanonicalDate.string(e.at))"
            if !e.detail.isEmpty { line += " (\(e.detail))" }
            lines.append(line)
            if let l = link(e.chain) { links[e.chain] = l; lines.append("  evidence: \(l)") }
        }
        lines += ["", "Acknowledge or snooze on the alerts page."]
        text = lines.joined(separator: "\n")
        self.links = links
    }

    private struct Body: Encodable {
        struct Item: Encodable {
            var chain: String
            var device: String?
            var condition: String
            var event: String
            var at: String
            var detail: String
            var link: String?
        }
        var key: String
        var person: String
        var subject: String
        var events: [Item]
    }

    /// The webhook body (sorted keys, dates as ISO 8601 UTC with milliseconds).
    public func json(key: String) throws -> String {
        let body = Body(key: key, person: person, subject: subject, events: events.map {
            .init(chain: $0.chain, device: $0.device, condition: $0.condition.rawValue, event: $0.event.rawValue,
                  at: CanonicalDate.string($0.at), detail: $0.detail, link: links[$0.chain])
        })
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(body), as: UTF8.self)
    }
}
