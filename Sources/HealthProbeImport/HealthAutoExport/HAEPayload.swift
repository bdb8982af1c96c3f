import HealthProbeArchive

/// One decoded Health Auto Export (format version 2) body.
public struct HAEPayload: Sendable {
    /// Samples of recognised HealthKit types, in payload order.
    public var samples: [HAESample] = []
    /// Items kept but not mapped to a HealthKit type; counted and reported.
    public var unrecognised: [HAEUnrecognised] = []

    /// Sample counts per type identifier (children included).
    public var countsByType: [String: Int] {
        var c: [String: Int] = [:]
        func add(_ s: HAESample) {
            c[s.typeIdentifier, default: 0] += 1
            s.children.forEach(add)
        }
        samples.forEach(add)
        return c
    }

    /// Unrecognised item counts per kind (`metric:<name>` or the array name).
    public var unrecognisedCounts: [String: Int] {
        var c: [String: Int] = [:]
        for u in unrecognised { c[u.kind, default: 0] += 1 }
        return c
    }
}

/// One sample with the JSON path it came from.
public struct HAESample: Sendable, Hashable {
    public var typeIdentifier: String
    public var sample: CapturedSample
    public var path: String
    /// Whether this is an aggregated point (its own identity class, never
    /// matched with raw samples).
    public var aggregated: Bool
    /// A workout's route and heart-rate points.
    public var children: [HAESample] = []
    /// The UTC offset (seconds) the point's date text carried (the phone's zone then);
    /// nil when not known (workouts).
    public var utcOffsetSeconds: Int? = nil
}

/// An item kept as it came (its path and kind), counted and reported: never
/// silently dropped. Holds no values.
public struct HAEUnrecognised: Sendable, Hashable {
    /// `metric:<name>` for a metric name not in the table, else the array name
    /// (`stateOfMind`, `ecg`, ...).
    public var kind: String
    public var path: String
}
