import HealthProbeArchive

/// One simulated HealthKit type: how many samples a day, their shape and source.
public struct SimulatedType: Sendable {
    public enum Shape: Sendable {
        /// `perDay` samples evenly spaced, each lasting `duration` seconds.
        case quantity(unit: String, perDay: Int, duration: Double, range: ClosedRange<Double>, decimals: Int)
        case category(perDay: Int, duration: Double, values: [Int])
        case sleep
        case workout(everyDays: Int)
    }

    public let index: UInt64
    public let descriptor: SampleTypeDescriptor
    public let shape: Shape
    /// Sources writing this type (two sources make overlapping duplicates, as iPhone + Watch steps do).
    public let sources: [SimulatedSource]
    /// Old days are consolidated into fewer, longer samples (iOS does this for high-frequency types).
    public let consolidates: Bool
    /// Every `unauthorizedEvery`-th capture this type is unauthorized (0: never).
    public let unauthorizedEvery: Int
    /// Every `failsEvery`-th capture this type's query fails (0: never).
    public let failsEvery: Int

    public var identifier: String { descriptor.identifier }
}

/// A synthetic source (app or device).
public struct SimulatedSource: Sendable {
    public let descriptor: SourceDescriptor
    public let device: DeviceDescriptor?
    public let salt: UInt64
}

extension SimulatedSource {
    static let watch = SimulatedSource(
        descriptor: SourceDescriptor(name: "Synthetic Watch", bundleIdentifier: "com.apple.health.5E3F1C2A-0000-4000-8000-000000000001",
                                     productType: "Watch6,1", version: "10.1", operatingSystemVersion: "10.1"),
        device: DeviceDescriptor(name: "Apple Watch", manufacturer: "Apple Inc.", model: "Watch", hardwareVersion: "Watch6,1", softwareVersion: "10.1"),
        salt: 1)
    static let phone = SimulatedSource(
        descriptor: SourceDescriptor(name: "Synthetic iPhone", bundleIdentifier: "com.apple.health.5E3F1C2A-0000-4000-8000-000000000002",
                                     productType: "iPhone14,2", version: "17.1", operatingSystemVersion: "17.1.2"),
        device: DeviceDescriptor(name: "iPhone", manufacturer: "Apple Inc.", model: "iPhone", hardwareVersion: "iPhone14,2", softwareVersion: "17.1.2"),
        salt: 2)
    static let scaleApp = SimulatedSource(
        descriptor: SourceDescriptor(name: "Synthetic Scale", bundleIdentifier: "org.example.synthetic-scale", productType: "iPhone14,2",
                                     version: "3.2", operatingSystemVersion: "0.0.0"),
        device: nil, salt: 3)
}

extension SimulatedType {
    private static func q(_ i: UInt64, _ id: String, _ name: String, _ unit: String, _ perDay: Int, _ duration: Double,
                          _ range: ClosedRange<Double>, _ decimals: Int = 0, sources: [SimulatedSource] = [.watch],
                          consolidates: Bool = false, unauthorizedEvery: Int = 0, failsEvery: Int = 0) -> SimulatedType {
        SimulatedType(index: i, descriptor: SampleTypeDescriptor("HKQuantityTypeIdentifier" + id, displayName: name, category: .quantity),
                      shape: .quantity(unit: unit, perDay: perDay, duration: duration, range: range, decimals: decimals),
                      sources: sources, consolidates: consolidates, unauthorizedEvery: unauthorizedEvery, failsEvery: failsEvery)
    }

    /// The simulated person's 16 types.
    public static let all: [SimulatedType] = [
        q(1, "HeartRate", "Heart Rate", "count/min", 288, 0, 52...128, consolidates: true),
        q(2, "StepCount", "Steps", "count", 24, 3600, 0...1400, sources: [.phone, .watch]),
        q(3, "ActiveEnergyBurned", "Active Energy", "kcal", 48, 1800, 2...60, 3, consolidates: true),
        q(4, "BasalEnergyBurned", "Resting Energy", "kcal", 24, 3600, 55...75, 3),
        q(5, "DistanceWalkingRunning", "Walking + Running Distance", "km", 24, 3600, 0...1.6, 4, sources: [.phone]),
        q(6, "FlightsClimbed", "Flights Climbed", "count", 5, 60, 1...4, sources: [.phone]),
        q(7, "HeartRateVariabilitySDNN", "Heart Rate Variability", "ms", 4, 60, 18...95, 2),
        q(8, "RestingHeartRate", "Resting Heart Rate", "count/min", 1, 0, 48...66),
        q(9, "RespiratoryRate", "Respiratory Rate", "count/min", 6, 0, 11...19, 1, failsEvery: 5),
        q(10, "OxygenSaturation", "Blood Oxygen", "%", 6, 0, 0.93...1.0, 2),
        q(11, "BodyMass", "Weight", "kg", 1, 0, 70...74, 1, sources: [.scaleApp], unauthorizedEvery: 4),
        q(12, "VO2Max", "Cardio Fitness", "mL/min·kg", 1, 0, 38...44, 2),
        q(13, "WalkingHeartRateAverage", "Walking Heart Rate Average", "count/min", 1, 0, 80...105),
        SimulatedType(index: 14, descriptor: SampleTypeDescriptor("HKCategoryTypeIdentifierSleepAnalysis", displayName: "Sleep", category: .category),
                      shape: .sleep, sources: [.watch], consolidates: false, unauthorizedEvery: 0, failsEvery: 0),
        SimulatedType(index: 15, descriptor: SampleTypeDescriptor("HKCategoryTypeIdentifierAppleStandHour", displayName: "Stand Hours", category: .category),
                      shape: .category(perDay: 12, duration: 3600, values: [0, 1]), sources: [.watch], consolidates: false, unauthorizedEvery: 0, failsEvery: 0),
        SimulatedType(index: 16, descriptor: SampleTypeDescriptor("HKWorkoutTypeIdentifier", displayName: "Workouts", category: .workout),
                      shape: .workout(everyDays: 2), sources: [.watch], consolidates: false, unauthorizedEvery: 0, failsEvery: 0),
    ]
}
