/// What a person sees for a HealthKit type: a friendly name, the unit its values are
/// shown in, and the daily statistic that fits it. The table below is data: one line a
/// type, for every type the importer and the simulator know and the common others. A type
/// not listed falls back to its identifier, never an error.
public struct TypeInfo: Sendable, Equatable, Codable {
    /// How a day of the type is summed up for a person.
    public enum Statistic: String, Sendable, Codable {
        /// Cumulative amounts (steps, energy, distance): the day's sum.
        case sum
        /// Discrete measurements (heart rate, blood oxygen): the day's range and average.
        case range
        /// Body measurements (weight, height): the day's last value.
        case latest
        /// Category states (sleep, stand hours): time per state.
        case duration
        /// Events (workouts, mindful sessions): how many.
        case count
    }

    public let identifier: String
    public let name: String
    /// The unit values are shown in (the archive's canonical unit); nil for categories and events.
    public let unit: String?
    public let statistic: Statistic
    /// Whether the name comes from the catalogue (false: the identifier stands in).
    public let known: Bool
}

public enum TypeCatalogue {
    /// The catalogue's entry for `identifier`, or one made from the identifier itself.
    public static func info(_ identifier: String) -> TypeInfo {
        if let e = byIdentifier[identifier] { return e }
        // Health Auto Export's aggregated points (`hp:hae:AGGREGATION:TYPE`): the type's own
        // entry, named as aggregated (they are their own kind, never matched with raw samples).
        if identifier.hasPrefix("hp:hae:") {
            let parts = identifier.split(separator: ":", maxSplits: 3).map(String.init)
            if parts.count == 4 {
                let base = info(parts[3])
                let how = parts[2] == "inferred" ? "aggregated" : "per \(parts[2].hasSuffix("s") ? String(parts[2].dropLast()) : parts[2])"
                return TypeInfo(identifier: identifier, name: "\(base.name) (Health Auto Export, \(how))", unit: base.unit, statistic: base.statistic, known: base.known)
            }
        }
        let statistic: TypeInfo.Statistic = identifier.hasPrefix("HKCategoryTypeIdentifier") ? .duration
            : identifier.hasPrefix("HKWorkoutTypeIdentifier") || identifier.hasPrefix("HKCorrelationTypeIdentifier") ? .count : .range
        return TypeInfo(identifier: identifier, name: identifier, unit: nil, statistic: statistic, known: false)
    }

    /// The friendly name of `identifier` (the identifier itself when unknown).
    public static func name(_ identifier: String) -> String { info(identifier).name }

    /// A named state of a category type.
    public struct State: Sendable, Equatable {
        public let value: Int64
        public let name: String
        /// Whether the state spans others rather than adding to them (sleep's "in bed" holds its stages).
        public let spansOthers: Bool
    }

    /// The named states of a category type, in the order people read them (empty when unknown).
    public static func states(_ identifier: String) -> [State] { statesByIdentifier[identifier] ?? [] }

    /// What a category value of `identifier` means, in words ("state 7" when unknown).
    public static func stateName(_ identifier: String, _ value: Int64) -> String {
        states(identifier).first { $0.value == value }?.name ?? "state \(value)"
    }

    /// HealthKit's category values (HKCategoryValueSleepAnalysis, HKCategoryValueAppleStandHour).
    private static let statesByIdentifier: [String: [State]] = [
        "HKCategoryTypeIdentifierSleepAnalysis": [
            State(value: 4, name: "Deep sleep", spansOthers: false), State(value: 3, name: "Core sleep", spansOthers: false),
            State(value: 5, name: "REM sleep", spansOthers: false), State(value: 1, name: "Asleep (no stage)", spansOthers: false),
            State(value: 2, name: "Awake", spansOthers: false), State(value: 0, name: "In bed", spansOthers: true),
        ],
        "HKCategoryTypeIdentifierAppleStandHour": [
            State(value: 0, name: "Stood", spansOthers: false), State(value: 1, name: "Did not stand", spansOthers: false),
        ],
    ]

    private static let byIdentifier: [String: TypeInfo] = Dictionary(uniqueKeysWithValues: table.map { entry in
        let (suffix, name, unit, statistic) = entry
        let id = suffix.hasPrefix("HK") ? suffix : "HKQuantityTypeIdentifier" + suffix
        return (id, TypeInfo(identifier: id, name: name, unit: unit, statistic: statistic, known: true))
    })

    /// (identifier, or its suffix after `HKQuantityTypeIdentifier`; name; unit; statistic).
    static let table: [(String, String, String?, TypeInfo.Statistic)] = [
        ("StepCount", "Steps", "steps", .sum),
        ("DistanceWalkingRunning", "Walking + running distance", "m", .sum),
        ("DistanceCycling", "Cycling distance", "m", .sum),
        ("DistanceSwimming", "Swimming distance", "m", .sum),
        ("FlightsClimbed", "Flights climbed", "floors", .sum),
        ("ActiveEnergyBurned", "Active energy", "kcal", .sum),
        ("BasalEnergyBurned", "Resting energy", "kcal", .sum),
        ("DietaryEnergyConsumed", "Dietary energy", "kcal", .sum),
        ("DietaryWater", "Water", "mL", .sum),
        ("AppleExerciseTime", "Exercise minutes", "min", .sum),
        ("AppleStandTime", "Stand minutes", "min", .sum),
        ("HeartRate", "Heart rate", "beats/min", .range),
        ("RestingHeartRate", "Resting heart rate", "beats/min", .range),
        ("WalkingHeartRateAverage", "Walking heart rate average", "beats/min", .range),
        ("HeartRateVariabilitySDNN", "Heart rate variability", "ms", .range),
        ("RespiratoryRate", "Respiratory rate", "breaths/min", .range),
        ("OxygenSaturation", "Blood oxygen", nil, .range),
        ("BloodGlucose", "Blood glucose", "mg/dL", .range),
        ("BloodPressureSystolic", "Blood pressure (systolic)", "mmHg", .range),
        ("BloodPressureDiastolic", "Blood pressure (diastolic)", "mmHg", .range),
        ("BodyTemperature", "Body temperature", "°C", .range),
        ("AppleSleepingWristTemperature", "Wrist temperature while asleep", "°C", .range),
        ("VO2Max", "Cardio fitness (VO₂ max)", "mL/min·kg", .latest),
        ("BodyMass", "Weight", "kg", .latest),
        ("Height", "Height", "m", .latest),
        ("BodyMassIndex", "Body mass index", nil, .latest),
        ("BodyFatPercentage", "Body fat", nil, .latest),
        ("LeanBodyMass", "Lean body mass", "kg", .latest),
        ("WaistCircumference", "Waist circumference", "m", .latest),
        ("HKCategoryTypeIdentifierSleepAnalysis", "Sleep", nil, .duration),
        ("HKCategoryTypeIdentifierAppleStandHour", "Stand hours", nil, .duration),
        ("HKCategoryTypeIdentifierMindfulSession", "Mindful minutes", nil, .count),
        ("HKWorkoutTypeIdentifier", "Workouts", nil, .count),
        ("HKCorrelationTypeIdentifierBloodPressure", "Blood pressure", nil, .count),
        ("HKCorrelationTypeIdentifierFood", "Food", nil, .count),
    ]
}
