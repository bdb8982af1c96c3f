import Foundation
import HealthProbeCanonical

/// The message one person gets for one evaluation round: device, condition, times and a
/// link to the evidence page. Never health values.
public struct AlertMessage: Sendable {
    public var person: String
    public var events: [AlertEvent]
    public var subject: String
    public var text: String
    /// Each event's evidence link, by index.
    var links: [Int: String]

    /// `link` makes an event's page path (`/chains/<chain>...`) a full URL, or nil for none.
    public init(person: String, events: [AlertEvent], now: Double, link: (String) -> String?) {
        self.person = person
        self.events = events
        let fired = events.filter { $0.event != .resolved }.count
        let resolved = events.count - fired
        subject = "HealthProbe: " + [fired > 0 ? "\(fired) alert\(fired == 1 ? "" : "s") firing" : nil,
                                     resolved > 0 ? "\(resolved) resolved" : nil].compactMap { $0 }.joined(separator: ", ")
        var links: [Int: String] = [:]
        var lines = ["Hello \(person),", ""]
        for (i, e) in events.enumerated() {
            let about = e.chain == AlertCondition.serverKey ? "the server" : "\(e.device ?? "an unowned device"), chain \(e.chain.prefix(12))"
            var line = "- \(e.condition.rawValue) \(e.event.rawValue): \(about), at \(CanonicalDate.string(e.at))"
            if !e.detail.isEmpty { line += " (\(e.detail))" }
            lines.append(line)
            if let l = link(e.path) { links[i] = l; lines.append("  evidence: \(l)") }
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
        let body = Body(key: key, person: person, subject: subject, events: events.enumerated().map { i, e in
            .init(chain: e.chain, device: e.device, condition: e.condition.rawValue, event: e.event.rawValue,
                  at: CanonicalDate.string(e.at), detail: e.detail, link: links[i])
        })
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(body), as: UTF8.self)
    }
}
