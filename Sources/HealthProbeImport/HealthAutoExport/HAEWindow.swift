/// The `period=` of a Health Auto Export automation.
public enum HAEPeriod: String, Sendable, CaseIterable {
    case `default`
    case sinceLastSync = "since_last_sync"
    case today
    case yesterday
    case previous7Days = "previous_7_days"
}

/// The `aggregation=` of a Health Auto Export automation.
public enum HAEAggregation: String, Sendable, CaseIterable {
    case none, minutes, hours, days
}

/// What one push covers: the closed time window it re-read completely (samples
/// of its types starting inside it that are absent have disappeared), if any.
/// `since_last_sync`, `today` (not yet closed) and an unstated period only add.
public struct HAEWindow: Sendable, Equatable {
    public var period: HAEPeriod?
    public var aggregation: HAEAggregation?
    /// The closed window re-read, Unix seconds UTC; nil when the push only adds.
    public var closed: Range<Double>?
    /// A `today` push's local day so far, midnight to the push: read but still open, so
    /// nothing absent from it disappears. The day is closed once it has ended and a later
    /// push re-reads it (`yesterday`, `previous_7_days`, `default`) with the same aggregation.
    public var open: Range<Double>?

    /// The window of a push received at `now`, days local to `utcOffsetSeconds` (the offset
    /// the payload's dates carry, `HAEScan.utcOffsetSeconds`, else the node's zone).
    public init(period: HAEPeriod?, aggregation: HAEAggregation?, now: Double, utcOffsetSeconds: Int) {
        self.period = period
        self.aggregation = aggregation
        let offset = Double(utcOffsetSeconds)
        let midnight = ((now + offset) / 86_400).rounded(.down) * 86_400 - offset
        switch period {
        case .some(.yesterday), .some(.default): closed = (midnight - 86_400)..<midnight
        case .some(.previous7Days): closed = (midnight - 7 * 86_400)..<midnight
        case .some(.sinceLastSync), .some(.today), .none: closed = nil
        }
        open = period == .today && now > midnight ? midnight..<now : nil
    }

    /// The type a sample is archived under: aggregated points are their own identity
    /// class per aggregation (never matched with raw samples, nor across aggregations).
    public func archiveType(_ sample: HAESample) -> String { archiveType(sample.typeIdentifier) }

    /// The type samples of `typeIdentifier` are archived under.
    public func archiveType(_ typeIdentifier: String) -> String {
        if typeIdentifier.hasPrefix("hp:") { return typeIdentifier }
        let key = aggregation?.rawValue ?? "inferred"
        return key == "none" ? typeIdentifier : "hp:hae:\(key):" + typeIdentifier
    }
}
