/// How a Health Auto Export metric name maps to HealthKit: data, not code.
struct HAEMetricMapping: Sendable {
    enum Shape: Sendable {
        /// `{qty, date, source}`
        case quantity
        /// `{Min, Avg, Max, date, source}` (or plain `qty`)
        case minAvgMax
        /// `{systolic, diastolic, date}`
        case bloodPressure
        /// `{qty, mealTime, date}`
        case bloodGlucose
        /// unaggregated `{startDate, endDate, value, qty}` or aggregated per night
        case sleep
    }
    var type: String
    var shape: Shape
}

enum HAEMetricTable {
    static let q = "HKQuantityTypeIdentifier"

    /// snake_case metric name -> HealthKit type and point shape.
    static let metrics: [String: HAEMetricMapping] = {
        var t: [String: HAEMetricMapping] = [:]
        let quantities: [(String, String)] = [
            ("step_count", "StepCount"), ("resting_heart_rate", "RestingHeartRate"),
            ("walking_heart_rate_average", "WalkingHeartRateAverage"),
            ("heart_rate_variability", "HeartRateVariabilitySDNN"),
            ("active_energy", "ActiveEnergyBurned"), ("basal_energy_burned", "BasalEnergyBurned"),
            ("walking_running_distance", "DistanceWalkingRunning"), ("cycling_distance", "DistanceCycling"),
            ("swimming_distance", "DistanceSwimming"), ("flights_climbed", "FlightsClimbed"),
            ("weight_body_mass", "BodyMass"), ("body_mass_index", "BodyMassIndex"),
            ("body_fat_percentage", "BodyFatPercentage"), ("lean_body_mass", "LeanBodyMass"), ("height", "Height"),
            ("blood_oxygen_saturation", "OxygenSaturation"), ("respiratory_rate", "RespiratoryRate"),
            ("body_temperature", "BodyTemperature"), ("apple_sleeping_wrist_temperature", "AppleSleepingWristTemperature"),
            ("apple_exercise_time", "AppleExerciseTime"), ("apple_stand_time", "AppleStandTime"),
            ("vo2_max", "VO2Max"), ("dietary_water", "DietaryWater"), ("dietary_energy", "DietaryEnergyConsumed"),
            ("walking_speed", "WalkingSpeed"), ("walking_step_length", "WalkingStepLength"),
            ("walking_asymmetry_percentage", "WalkingAsymmetryPercentage"),
            ("walking_double_support_percentage", "WalkingDoubleSupportPercentage"),
            ("six_minute_walking_test_distance", "SixMinuteWalkTestDistance"),
            ("stair_speed_up", "StairAscentSpeed"), ("stair_speed_down", "StairDescentSpeed"),
            ("environmental_audio_exposure", "EnvironmentalAudioExposure"),
            ("headphone_audio_exposure", "HeadphoneAudioExposure"),
            ("time_in_daylight", "TimeInDaylight"), ("physical_effort", "PhysicalEffort"),
        ]
        for (name, id) in quantities { t[name] = HAEMetricMapping(type: q + id, shape: .quantity) }
        t["heart_rate"] = HAEMetricMapping(type: q + "HeartRate", shape: .minAvgMax)
        t["blood_pressure"] = HAEMetricMapping(type: "HKCorrelationTypeIdentifierBloodPressure", shape: .bloodPressure)
        t["blood_glucose"] = HAEMetricMapping(type: q + "BloodGlucose", shape: .bloodGlucose)
        t["sleep_analysis"] = HAEMetricMapping(type: "HKCategoryTypeIdentifierSleepAnalysis", shape: .sleep)
        return t
    }()

    /// Sleep stage text -> HKCategoryValueSleepAnalysis raw value.
    static let sleepValues: [String: Int] = [
        "In Bed": 0, "Asleep": 1, "Unspecified": 1, "Awake": 2, "Core": 3, "Deep": 4, "REM": 5,
    ]

    /// The type of an aggregated nightly sleep row: its own identity class.
    static let sleepNightType = "hp:hae:sleep_analysis_night"
    static let systolicType = q + "BloodPressureSystolic"
    static let diastolicType = q + "BloodPressureDiastolic"
    static let workoutType = "HKWorkoutTypeIdentifier"
    static let routeType = "HKWorkoutRouteTypeIdentifier"
    static let workoutHeartRateType = q + "HeartRate"

    /// Newer top-level arrays kept as unrecognised items (counted, reported).
    static let keptArrays = ["stateOfMind", "medications", "symptoms", "cycleTracking", "ecg", "heartRateNotifications"]
}
