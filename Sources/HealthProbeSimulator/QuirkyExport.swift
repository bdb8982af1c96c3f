import Foundation
import ZIPFoundation

/// A small synthetic export that carries, in one file, the quirks real Apple Health
/// exports are known for: an optional DTD (`SyntheticDTD`), a `Me` element, a blood
/// glucose unit with a molar mass (`mmol<180.1558800000541>/L`), typographic
/// apostrophes in source names, attributes spread over several lines, metadata keys
/// that differ only in case, a device string with a memory address, records that also
/// appear as members of a correlation, a workout with events, nested statistics in a
/// `WorkoutActivity` and the same `WorkoutRoute` twice (with its GPX file in the zip),
/// category samples and an activity summary. Every value is synthetic.
public struct QuirkyExport: Sendable {
    /// The DTD at the top (nil: none).
    public var dtd: SyntheticDTD?
    /// Attributes each on their own line, indented (as some exporters write them).
    public var multiLineAttributes = false
    /// The date of birth in `Me`, which the archive must keep only as a hash.
    public static let dateOfBirth = "1981-03-14"
    /// How many importable top-level elements the export holds: 2 blood glucose, 2 body
    /// mass, 3 heart rate, 1 dietary energy, 2 blood pressure records, 1 correlation,
    /// 2 sleep records, 1 workout with 2 routes, 1 activity summary.
    public static let importableElements = 2 + 2 + 3 + 1 + 2 + 1 + 2 + 1 + 2 + 1
    /// The route file the workout refers to.
    public static let routeFile = "workout-routes/route_2024-05-03_6.10pm.gpx"

    public init(dtd: SyntheticDTD? = nil, multiLineAttributes: Bool = false) {
        self.dtd = dtd
        self.multiLineAttributes = multiLineAttributes
    }

    /// The whole export.xml.
    public var xml: String {
        var out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
        if let dtd { out += dtd.text + "\n" }
        out += "<HealthData locale=\"en_GB\">\n"
        out += element("ExportDate", [("value", "2024-06-01 09:00:00 +0100")])
        out += element("Me", [("HKCharacteristicTypeIdentifierDateOfBirth", Self.dateOfBirth),
                              ("HKCharacteristicTypeIdentifierBiologicalSex", "HKBiologicalSexNotSet"),
                              ("HKCharacteristicTypeIdentifierBloodType", "HKBloodTypeNotSet"),
                              ("HKCharacteristicTypeIdentifierFitzpatrickSkinType", "HKFitzpatrickSkinTypeNotSet"),
                              ("HKCharacteristicTypeIdentifierCardioFitnessMedicationsUse", "None")])
        let manual = [("sourceName", "Health"), ("sourceVersion", "17.4")]
        for (i, (time, value)) in [("2024-01-09 12:30:00 +0100", "4.59"), ("2024-01-09 18:30:00 +0100", "5.23")].enumerated() {
            out += element("Record", [("type", "HKQuantityTypeIdentifierBloodGlucose")] + manual + [
                ("unit", "mmol&lt;180.1558800000541&gt;/L"), ("creationDate", "2024-01-09 22:32:54 +0100"),
                ("startDate", time), ("endDate", time), ("value", value)],
                children: [metadata("HKWasUserEntered", "1"), metadata("HKBloodGlucoseMealTime", "\(i + 1)")])
        }
        for (time, value) in [("2024-01-03 07:38:45 +0100", "68.5"), ("2024-01-04 07:07:25 +0100", "68.9")] {
            out += element("Record", [("type", "HKQuantityTypeIdentifierBodyMass"), ("sourceName", "Synthetic Scale"), ("sourceVersion", "202311211629"),
                                      ("unit", "kg"), ("creationDate", time), ("startDate", time), ("endDate", time), ("value", value)])
        }
        let watch = [("sourceName", "Synthetic’s Watch"), ("sourceVersion", "10.2"),
                     ("device", "&lt;&lt;HKDevice: 0x3012772a0&gt;, name:Apple Watch, manufacturer:Apple Inc., model:Watch, hardware:Watch6,7, software:10.2&gt;")]
        for (i, (time, value)) in [("2024-01-01 01:01:36 +0100", "74"), ("2024-01-01 01:01:37 +0100", "75"), ("2024-01-01 01:06:02 +0100", "81")].enumerated() {
            out += element("Record", [("type", "HKQuantityTypeIdentifierHeartRate")] + watch + [
                ("unit", "count/min"), ("creationDate", time), ("startDate", time), ("endDate", time), ("value", value)],
                children: [metadata("HKMetadataKeyHeartRateMotionContext", "\(i % 2)")])
        }
        out += element("Record", [("type", "HKQuantityTypeIdentifierDietaryEnergyConsumed"), ("sourceName", "Synthetic Food Log"), ("sourceVersion", "3.1"),
                                  ("unit", "kcal"), ("creationDate", "2024-01-05 12:40:00 +0100"), ("startDate", "2024-01-05 12:30:00 +0100"),
                                  ("endDate", "2024-01-05 12:30:00 +0100"), ("value", "512")],
                       children: [metadata("Meal", "Lunch"), metadata("meal", "lunch")])
        let bp = "2024-01-10 11:30:00 +0100"
        func pressure(_ type: String, _ value: String) -> [(String, String)] {
            [("type", type)] + manual + [("unit", "mmHg"), ("creationDate", bp), ("startDate", bp), ("endDate", bp), ("value", value)]
        }
        let systolic = pressure("HKQuantityTypeIdentifierBloodPressureSystolic", "121")
        let diastolic = pressure("HKQuantityTypeIdentifierBloodPressureDiastolic", "79")
        out += element("Record", systolic) + element("Record", diastolic)
        out += element("Correlation", [("type", "HKCorrelationTypeIdentifierBloodPressure")] + manual + [("creationDate", bp), ("startDate", bp), ("endDate", bp)],
                       children: [metadata("HKWasUserEntered", "1"), element("Record", systolic, indent: 2), element("Record", diastolic, indent: 2)])
        for (start, value) in [("2024-01-07 23:05:06 +0100", "HKCategoryValueSleepAnalysisInBed"), ("2024-01-07 23:15:00 +0100", "HKCategoryValueSleepAnalysisAsleepCore")] {
            out += element("Record", [("type", "HKCategoryTypeIdentifierSleepAnalysis"), ("sourceName", "Synthetic’s iPhone"), ("sourceVersion", "17.4"),
                                      ("creationDate", "2024-01-08 07:37:42 +0100"), ("startDate", start), ("endDate", "2024-01-08 07:30:00 +0100"), ("value", value)],
                           children: [metadata("HKTimeZone", "Europe/London")])
        }
        let ws = "2024-05-03 18:10:00 +0100", we = "2024-05-03 18:55:00 +0100"
        let route = element("WorkoutRoute", [("sourceName", "Synthetic’s Watch"), ("sourceVersion", "10.2"), ("creationDate", "2024-05-03 18:56:00 +0100"),
                                             ("startDate", ws), ("endDate", we)],
                            children: [metadata("HKMetadataKeySyncVersion", "2"), element("FileReference", [("path", "/" + Self.routeFile)], indent: 3)], indent: 2)
        out += element("Workout", [("workoutActivityType", "HKWorkoutActivityTypeWalking"), ("duration", "45"), ("durationUnit", "min"),
                                   ("totalDistance", "3.1"), ("totalDistanceUnit", "km"), ("totalEnergyBurned", "210"), ("totalEnergyBurnedUnit", "Cal")]
                       + watch + [("creationDate", "2024-05-03 18:56:00 +0100"), ("startDate", ws), ("endDate", we)],
                       children: [metadata("HKIndoorWorkout", "0"),
                                  element("WorkoutEvent", [("type", "HKWorkoutEventTypePause"), ("date", "2024-05-03 18:30:00 +0100")], indent: 2),
                                  element("WorkoutEvent", [("type", "HKWorkoutEventTypeResume"), ("date", "2024-05-03 18:32:30 +0100")], indent: 2),
                                  element("WorkoutActivity", [("uuid", "0A1B2C3D-4E5F-4A6B-8C7D-9E0F1A2B3C4D"), ("startDate", ws), ("endDate", we),
                                                              ("duration", "45"), ("durationUnit", "min")],
                                          children: [element("WorkoutStatistics", [("type", "HKQuantityTypeIdentifierDistanceWalkingRunning"), ("startDate", ws),
                                                                                   ("endDate", we), ("sum", "1.93"), ("unit", "mi")], indent: 3)], indent: 2),
                                  element("WorkoutStatistics", [("type", "HKQuantityTypeIdentifierHeartRate"), ("startDate", ws), ("endDate", we),
                                                                ("average", "112.5"), ("minimum", "81"), ("maximum", "139"), ("unit", "count/min")], indent: 2),
                                  route, route])
        out += element("ActivitySummary", [("dateComponents", "2024-05-03"), ("activeEnergyBurned", "590.252"), ("activeEnergyBurnedGoal", "630"),
                                           ("activeEnergyBurnedUnit", "kcal"), ("appleExerciseTime", "68"), ("appleExerciseTimeGoal", "30"),
                                           ("appleStandHours", "13"), ("appleStandHoursGoal", "12")])
        out += "</HealthData>\n"
        return out
    }

    /// A three-point GPX track for the workout's route.
    public static let gpx = """
    <?xml version="1.0" encoding="UTF-8"?>
    <gpx version="1.1" creator="Synthetic"><trk><name>Route</name><trkseg>
    <trkpt lon="-0.1276" lat="51.5072"><ele>11.0</ele><time>2024-05-03T17:10:00Z</time></trkpt>
    <trkpt lon="-0.1270" lat="51.5075"><ele>11.2</ele><time>2024-05-03T17:10:05Z</time></trkpt>
    <trkpt lon="-0.1265" lat="51.5079"><ele>11.5</ele><time>2024-05-03T17:10:10Z</time></trkpt>
    </trkseg></trk></gpx>

    """

    /// Writes export.xml to `path`.
    public func writeXML(to path: String) throws {
        try Data(xml.utf8).write(to: URL(fileURLWithPath: path))
    }

    /// Writes an export.zip: `apple_health_export/<xmlName>`, the route's GPX file,
    /// `export_cda.xml`, an AppleDouble member under `__MACOSX/` and a `.DS_Store`.
    public func writeZip(to path: String, xmlName: String = "export.xml") throws {
        try? FileManager.default.removeItem(atPath: path)
        let archive = try ZIPFoundation.Archive(url: URL(fileURLWithPath: path), accessMode: .create)
        func add(_ name: String, _ data: Data, compressed: Bool = true) throws {
            try archive.addEntry(with: name, type: .file, uncompressedSize: Int64(data.count), compressionMethod: compressed ? .deflate : .none) { pos, size in
                data.subdata(in: Int(pos)..<Int(pos) + size)
            }
        }
        try add("apple_health_export/" + xmlName, Data(xml.utf8))
        try add("apple_health_export/" + Self.routeFile, Data(Self.gpx.utf8))
        try add("apple_health_export/export_cda.xml", Data("<?xml version=\"1.0\"?><ClinicalDocument/>".utf8))
        try add("__MACOSX/apple_health_export/._" + xmlName, Data("\u{0}\u{5}\u{16}\u{7}\u{0}\u{2}junk".utf8), compressed: false)
        try add(".DS_Store", Data("\u{0}\u{0}\u{0}\u{1}Bud1".utf8), compressed: false)
    }

    private func metadata(_ key: String, _ value: String) -> String {
        element("MetadataEntry", [("key", key), ("value", value)], indent: 2)
    }

    private func element(_ name: String, _ attributes: [(String, String)], children: [String] = [], indent: Int = 1) -> String {
        let pad = String(repeating: " ", count: indent)
        let separator = multiLineAttributes ? "\n" + pad + "    " : " "
        let attrs = attributes.map { "\($0.0)=\"\($0.1)\"" }.joined(separator: separator)
        if children.isEmpty { return "\(pad)<\(name) \(attrs)/>\n" }
        return "\(pad)<\(name) \(attrs)>\n" + children.joined() + "\(pad)</\(name)>\n"
    }
}
