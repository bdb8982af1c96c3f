/// The internal DTD subset Apple Health puts at the top of export.xml, written by
/// the project (element and attribute declarations of the export format) in the
/// shapes real exports carry: version 13 and 14 headers, and the iOS 16 header
/// whose `<!ATTLIST VisionPrescription` is never closed (a strict XML parser stops
/// there; the stray `>` follows at the end of the subset).
public enum SyntheticDTD: Sendable, CaseIterable {
    case v13
    case v14
    /// iOS 16 (export version 12): one attribute list left open.
    case iOS16Broken

    /// `<!DOCTYPE HealthData [ ... ]>`, without the XML declaration.
    public var text: String {
        var out = ["<!DOCTYPE HealthData [", "<!-- HealthKit Export Version: \(version) -->"]
        var unclosed = false
        for (element, content, attributes) in Self.declarations(version) {
            out.append("<!ELEMENT \(element) \(content)>")
            guard !attributes.isEmpty else { continue }
            out.append("<!ATTLIST \(element)")
            out += attributes.map { "  \($0.name) CDATA #\($0.required ? "REQUIRED" : "IMPLIED")" }
            if self == .iOS16Broken && element == "VisionPrescription" { unclosed = true; continue }
            out.append(">")
        }
        if unclosed { out.append(">") }
        out.append("]>")
        return out.joined(separator: "\n")
    }

    var version: Int {
        switch self {
        case .v13: 13
        case .v14: 14
        case .iOS16Broken: 12
        }
    }

    private typealias Attribute = (name: String, required: Bool)

    private static func required(_ names: String) -> [Attribute] { names.split(separator: " ").map { (String($0), true) } }
    private static func implied(_ names: String) -> [Attribute] { names.split(separator: " ").map { (String($0), false) } }

    private static func declarations(_ version: Int) -> [(String, String, [Attribute])] {
        let topLevel = version >= 13
            ? "(ExportDate,Me,(Record|Correlation|Workout|ActivitySummary|ClinicalRecord|Audiogram|VisionPrescription)*)"
            : "(ExportDate,Me,(Record|Correlation|Workout|ActivitySummary|ClinicalRecord|VisionPrescription)*)"
        let sampleDates = required("startDate endDate")
        var list: [(String, String, [Attribute])] = [
            ("HealthData", topLevel, required("locale")),
            ("ExportDate", "EMPTY", required("value")),
            ("Me", "EMPTY", required("HKCharacteristicTypeIdentifierDateOfBirth HKCharacteristicTypeIdentifierBiologicalSex HKCharacteristicTypeIdentifierBloodType HKCharacteristicTypeIdentifierFitzpatrickSkinType")),
            ("Record", "((MetadataEntry|HeartRateVariabilityMetadataList)*)",
             required("type") + implied("unit") + required("sourceName") + implied("sourceVersion device creationDate") + sampleDates + implied("value")),
            ("MetadataEntry", "EMPTY", implied("key value")),
            ("HeartRateVariabilityMetadataList", "(InstantaneousBeatsPerMinute*)", []),
            ("InstantaneousBeatsPerMinute", "EMPTY", required("bpm time")),
            ("Correlation", "((MetadataEntry|Record)*)", required("type sourceName") + implied("sourceVersion device creationDate") + sampleDates),
            ("Workout", "((MetadataEntry|WorkoutEvent|WorkoutRoute|WorkoutStatistics)*)",
             required("workoutActivityType") + implied("duration durationUnit totalDistance totalDistanceUnit totalEnergyBurned totalEnergyBurnedUnit")
                + required("sourceName") + implied("sourceVersion device creationDate") + sampleDates),
            ("WorkoutActivity", "((WorkoutEvent|WorkoutStatistics|MetadataEntry)*)", required("uuid startDate") + implied("endDate duration durationUnit")),
            ("WorkoutEvent", "EMPTY", required("type date") + implied("duration durationUnit")),
            ("WorkoutStatistics", "EMPTY", required("type") + sampleDates + implied("average minimum maximum sum unit")),
            ("WorkoutRoute", "((MetadataEntry|FileReference)*)", required("sourceName") + implied("sourceVersion device creationDate") + sampleDates),
            ("FileReference", "EMPTY", required("path")),
            ("ActivitySummary", "EMPTY", implied("dateComponents activeEnergyBurned activeEnergyBurnedGoal activeEnergyBurnedUnit appleMoveTime appleMoveTimeGoal appleExerciseTime appleExerciseTimeGoal appleStandHours appleStandHoursGoal")),
            ("ClinicalRecord", "EMPTY", required("type identifier sourceName sourceURL fhirVersion receivedDate resourceFilePath")),
        ]
        if version >= 13 {
            var ears = implied("type sourceName sourceVersion device creationDate startDate endDate")
            if version >= 14 { ears += implied("leftEarMasked leftEarClampingRangeLowerBound leftEarClampingRangeUpperBound rightEarMasked rightEarClampingRangeLowerBound rightEarClampingRangeUpperBound") }
            list.append(("Audiogram", "((MetadataEntry|SensitivityPoint)*)", ears))
            list.append(("SensitivityPoint", "EMPTY", required("frequencyValue frequencyUnit") + implied("leftEarValue leftEarUnit rightEarValue rightEarUnit")))
        }
        list.append(("VisionPrescription", "((RightEye|LeftEye|Attachment|MetadataEntry)*)", required("type dateIssued") + implied("expirationDate brand")))
        list.append(("RightEye", "EMPTY", implied("sphere sphereUnit cylinder cylinderUnit axis axisUnit")))
        list.append(("LeftEye", "EMPTY", implied("sphere sphereUnit cylinder cylinderUnit axis axisUnit")))
        list.append(("Attachment", "EMPTY", implied("identifier")))
        return list
    }
}
