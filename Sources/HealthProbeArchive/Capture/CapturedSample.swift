import HealthProbeCanonical

/// What a sample's value is.
public enum ValueKind: String, Sendable, Codable, CaseIterable {
    case quantity
    case category
    case workout
    case correlation
    case activitySummary = "activity_summary"
    case heartbeatSeries = "heartbeat_series"
    case route
    case other
}

/// The app or device that wrote a sample, as the source reports it (raw; the
/// archive HMACs the name and normalizes the rest).
public struct SourceDescriptor: Sendable, Hashable {
    public var name: String?
    public var bundleIdentifier: String?
    public var productType: String?
    public var version: String?
    public var operatingSystemVersion: String?

    public init(name: String? = nil, bundleIdentifier: String? = nil, productType: String? = nil,
                version: String? = nil, operatingSystemVersion: String? = nil) {
        self.name = name
        self.bundleIdentifier = bundleIdentifier
        self.productType = productType
        self.version = version
        self.operatingSystemVersion = operatingSystemVersion
    }
}

/// The hardware that recorded a sample (raw; identifiers are HMAC'd on write).
public struct DeviceDescriptor: Sendable, Hashable {
    public var name: String?
    public var manufacturer: String?
    public var model: String?
    public var hardwareVersion: String?
    public var firmwareVersion: String?
    public var softwareVersion: String?
    public var localIdentifier: String?
    public var udiDeviceIdentifier: String?

    public init(name: String? = nil, manufacturer: String? = nil, model: String? = nil, hardwareVersion: String? = nil,
                firmwareVersion: String? = nil, softwareVersion: String? = nil, localIdentifier: String? = nil,
                udiDeviceIdentifier: String? = nil) {
        self.name = name
        self.manufacturer = manufacturer
        self.model = model
        self.hardwareVersion = hardwareVersion
        self.firmwareVersion = firmwareVersion
        self.softwareVersion = softwareVersion
        self.localIdentifier = localIdentifier
        self.udiDeviceIdentifier = udiDeviceIdentifier
    }
}

/// A sample's time window as its semantic key (Unix seconds UTC).
public struct SemanticWindow: Sendable, Hashable {
    public var start: Double
    public var end: Double
    public init(start: Double, end: Double) { self.start = start; self.end = end }

    /// The same window as a `semanticKey` value.
    public var key: JSONValue { .object(["start": .string(CanonicalDate.string(start)), "end": .string(CanonicalDate.string(end))]) }
}

/// One sample as a capture source (HealthKit, an export importer, the
/// simulator) reports it. Dates are Unix seconds UTC.
public struct CapturedSample: Sendable, Hashable {
    /// The HealthKit UUID when the source has one (HMAC'd on write).
    public var uuid: String?
    public var startDate: Double
    public var endDate: Double
    /// When the source created the sample, if it says (Apple Health exports do).
    public var creationDate: Double?
    public var valueKind: ValueKind
    public var numericValue: Double?
    public var unit: String?
    public var categoryValue: Int?
    public var workoutActivityType: Int?
    public var durationSeconds: Double?
    public var source: SourceDescriptor?
    public var device: DeviceDescriptor?
    /// Metadata, stored as a canonical JSON blob.
    public var metadata: [String: JSONValue]?
    /// Optional type-specific semantic key (weak consolidation context only).
    public var semanticKey: JSONValue?
    /// A semantic key that is just the time window, `{"end": <date>, "start": <date>}`
    /// as canonical date strings: the same fingerprint as that `semanticKey`, without
    /// building it (used when `semanticKey` is nil).
    public var semanticWindow: SemanticWindow?

    public init(uuid: String? = nil, startDate: Double, endDate: Double, valueKind: ValueKind,
                numericValue: Double? = nil, unit: String? = nil, categoryValue: Int? = nil,
                workoutActivityType: Int? = nil, durationSeconds: Double? = nil,
                source: SourceDescriptor? = nil, device: DeviceDescriptor? = nil,
                metadata: [String: JSONValue]? = nil, semanticKey: JSONValue? = nil) {
        self.uuid = uuid
        self.startDate = startDate
        self.endDate = endDate
        self.valueKind = valueKind
        self.numericValue = numericValue
        self.unit = unit
        self.categoryValue = categoryValue
        self.workoutActivityType = workoutActivityType
        self.durationSeconds = durationSeconds
        self.source = source
        self.device = device
        self.metadata = metadata
        self.semanticKey = semanticKey
    }
}
