import HealthProbeArchive

/// What a Health Auto Export body holds, counted in a first pass that keeps no sample:
/// enough to begin its observation (the types) before the second pass records.
public struct HAEScan: Sendable, Equatable {
    /// Samples, children (a workout's route and heart rate, a blood pressure's two values) included.
    public var samples = 0
    /// Per type identifier, the value kind of its first sample.
    public var types: [String: ValueKind] = [:]
    /// Unrecognised item counts per kind (`metric:<name>` or the array name).
    public var unrecognisedCounts: [String: Int] = [:]
    /// The UTC offset the payload's latest dated point carried (the phone's zone when it
    /// sent it): the push's local days. Nil when no point carried one.
    public var utcOffsetSeconds: Int?

    /// Items kept but not mapped to a HealthKit type.
    public var unrecognised: Int { unrecognisedCounts.values.reduce(0, +) }

    public init() {}
}
