import HealthProbeCanonical

/// How a Health Auto Export push's window is written in its observation's notes (which
/// travel in bundles), and read back for people: the period and aggregation the
/// automation was set to, the closed window it re-read (nil: it only adds), and how many
/// items were kept but not archived.
public struct CaptureWindowNote: Sendable, Equatable {
    public var period: String
    public var aggregation: String
    public var closed: Range<Double>?
    public var unrecognised: Int

    public init(period: String?, aggregation: String?, closed: Range<Double>?, unrecognised: Int) {
        self.period = period ?? "inferred"
        self.aggregation = aggregation ?? "inferred"
        self.closed = closed
        self.unrecognised = unrecognised
    }

    static let prefix = "health_auto_export"

    /// The notes text: `health_auto_export period=P aggregation=A closed=FROM/TO|additive unrecognised=N`.
    public var text: String {
        "\(Self.prefix) period=\(period) aggregation=\(aggregation)"
            + (closed.map { " closed=\(CanonicalDate.string($0.lowerBound))/\(CanonicalDate.string($0.upperBound))" } ?? " additive")
            + " unrecognised=\(unrecognised)"
    }

    /// The note in `notes`, nil when the observation is not a Health Auto Export push.
    public static func parse(_ notes: String?) -> CaptureWindowNote? {
        guard let notes, notes.utf8.count <= 512 else { return nil }
        let words = notes.split(separator: " ")
        guard words.first == Substring(prefix) else { return nil }
        var fields: [String: String] = [:]
        for w in words.dropFirst() {
            if let eq = w.firstIndex(of: "=") { fields[String(w[..<eq])] = String(w[w.index(after: eq)...]) }
        }
        var closed: Range<Double>?
        if let c = fields["closed"] {
            let ends = c.split(separator: "/").map(String.init)
            guard ends.count == 2, let a = CanonicalDate.parse(ends[0]), let b = CanonicalDate.parse(ends[1]), a < b else { return nil }
            closed = a..<b
        }
        return CaptureWindowNote(period: fields["period"], aggregation: fields["aggregation"], closed: closed,
                                 unrecognised: fields["unrecognised"].flatMap { Int($0) }.map { max($0, 0) } ?? 0)
    }

    /// The window in words, for pages and tables.
    public var words: String {
        let period = switch self.period {
        case "since_last_sync": "since the last sync"
        case "previous_7_days": "the previous 7 days"
        case "inferred": "a period it did not name"
        default: self.period
        }
        let aggregation = switch self.aggregation {
        case "none": "raw samples"
        case "inferred": "aggregation not named"
        default: "aggregated by \(self.aggregation)"
        }
        let window = closed.map { "re-read \(CanonicalDate.string($0.lowerBound).prefix(16).replacingOccurrences(of: "T", with: " ")) to \(CanonicalDate.string($0.upperBound).prefix(16).replacingOccurrences(of: "T", with: " ")) UTC completely, so a record missing from that window has disappeared" }
            ?? "only adds: nothing it lacks counts as disappeared"
        return "Health Auto Export push (\(period), \(aggregation)): \(window)"
            + (unrecognised > 0 ? "; \(unrecognised) item(s) kept but not archived" : "") + "."
    }
}
