import HealthProbeCanonical

/// How a Health Auto Export push's window is written in its observation's notes (which
/// travel in bundles), and read back for people: the period and aggregation the
/// automation was set to, the closed window it re-read (nil: it only adds), the open
/// window a `today` push read so far (its local day up to the push), and how many items
/// were kept but not archived.
public struct CaptureWindowNote: Sendable, Equatable {
    public var period: String
    public var aggregation: String
    public var closed: Range<Double>?
    /// A `today` push's local day from its midnight to the push: read, but not closed.
    public var open: Range<Double>?
    public var unrecognised: Int

    public init(period: String?, aggregation: String?, closed: Range<Double>?, open: Range<Double>? = nil, unrecognised: Int) {
        self.period = period ?? "inferred"
        self.aggregation = aggregation ?? "inferred"
        self.closed = closed
        self.open = closed == nil ? open : nil
        self.unrecognised = unrecognised
    }

    /// Whether the push named its period (else `inferred`).
    public var periodDeclared: Bool { period != "inferred" }
    /// Whether the push named its aggregation (else `inferred`).
    public var aggregationDeclared: Bool { aggregation != "inferred" }

    static let prefix = "health_auto_export"

    /// The notes text: `health_auto_export period=P aggregation=A closed=FROM/TO|open=FROM/TO|additive unrecognised=N`.
    public var text: String {
        func range(_ r: Range<Double>) -> String { "\(CanonicalDate.string(r.lowerBound))/\(CanonicalDate.string(r.upperBound))" }
        return "\(Self.prefix) period=\(period) aggregation=\(aggregation)"
            + (closed.map { " closed=" + range($0) } ?? open.map { " open=" + range($0) } ?? " additive")
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
        func range(_ key: String) -> Range<Double>?? {
            guard let c = fields[key] else { return .some(nil) }
            let ends = c.split(separator: "/").map(String.init)
            guard ends.count == 2, let a = CanonicalDate.parse(ends[0]), let b = CanonicalDate.parse(ends[1]), a < b else { return nil }
            return a..<b
        }
        guard let closed = range("closed"), let open = range("open") else { return nil }
        return CaptureWindowNote(period: fields["period"], aggregation: fields["aggregation"], closed: closed, open: open,
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
        func minute(_ t: Double) -> String { CanonicalDate.string(t).prefix(16).replacingOccurrences(of: "T", with: " ") }
        let window = closed.map { "re-read \(CanonicalDate.string($0.lowerBound).prefix(16).replacingOccurrences(of: "T", with: " ")) to \(CanonicalDate.string($0.upperBound).prefix(16).replacingOccurrences(of: "T", with: " ")) UTC completely, so a record missing from that window has disappeared" }
            ?? open.map { "read its day so far, \(minute($0.lowerBound)) to \(minute($0.upperBound)) UTC, still open: nothing it lacks counts as disappeared until a later push re-reads that day" }
            ?? "only adds: nothing it lacks counts as disappeared"
        return "Health Auto Export push (\(period), \(aggregation)): \(window)"
            + (unrecognised > 0 ? "; \(unrecognised) item(s) kept but not archived" : "") + "."
    }
}
