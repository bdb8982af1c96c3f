import Foundation
import HealthProbeArchive
import HealthProbeCanonical
import ZIPFoundation

/// Writes synthetic Apple Health exports in the real format (export.xml with
/// optional DTD; export.zip with `apple_health_export/`, `__MACOSX/` and
/// `.DS_Store` junk). Records are a pure function of (seed, index), so
/// variants of one export (edited, removed, added records; other display
/// units; other device addresses) can be made to test re-imports.
public struct SyntheticExport: Sendable {
    public var records: Int
    public var seed: UInt64 = 1
    /// Every `editEvery`-th record gets a different value (0: none).
    public var editEvery = 0
    /// Every `removeEvery`-th record is left out (0: none).
    public var removeEvery = 0
    /// Records appended after the regular ones.
    public var added = 0
    /// Energy in kJ instead of kcal, distance in mi instead of km.
    public var alternateUnits = false
    /// Salt for the `<<HKDevice: 0x...>` memory address.
    public var deviceAddressSalt: UInt64 = 0
    /// A DTD to put in the header (nil: none).
    public var dtd: String?
    /// Workouts and correlations every this many records (0: none).
    public var compositeEvery = 500

    public init(records: Int) { self.records = records }

    static let types: [(String, String, ClosedRange<Double>)] = [
        ("HKQuantityTypeIdentifierHeartRate", "count/min", 50...150),
        ("HKQuantityTypeIdentifierStepCount", "count", 5...900),
        ("HKQuantityTypeIdentifierActiveEnergyBurned", "kcal", 0.1...40),
        ("HKQuantityTypeIdentifierDistanceWalkingRunning", "km", 0.01...1.2),
        ("HKQuantityTypeIdentifierBasalEnergyBurned", "kcal", 1...3),
        ("HKQuantityTypeIdentifierHeartRateVariabilitySDNN", "ms", 15...90),
    ]
    static let start: Double = 1_640_995_200  // 2022-01-01T00:00:00Z

    /// Writes export.xml to `path`, streaming.
    public func writeXML(to path: String) throws {
        _ = FileManager.default.createFile(atPath: path, contents: nil)
        guard let h = FileHandle(forWritingAtPath: path) else { throw CocoaError(.fileWriteUnknown) }
        defer { try? h.close() }
        var buf = ""
        buf.reserveCapacity(1 << 20)
        func emit(_ s: String) throws {
            buf += s
            if buf.utf8.count > 1 << 20 { try h.write(contentsOf: Data(buf.utf8)); buf.removeAll(keepingCapacity: true) }
        }
        try emit("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n")
        if let dtd { try emit(dtd + "\n") }
        try emit("<HealthData locale=\"en_US\">\n <ExportDate value=\"2024-06-01 09:00:00 +0200\"/>\n")
        try emit(" <Me HKCharacteristicTypeIdentifierDateOfBirth=\"1980-01-01\" HKCharacteristicTypeIdentifierBiologicalSex=\"HKBiologicalSexNotSet\" HKCharacteristicTypeIdentifierBloodType=\"HKBloodTypeNotSet\" HKCharacteristicTypeIdentifierFitzpatrickSkinType=\"HKFitzpatrickSkinTypeNotSet\" HKCharacteristicTypeIdentifierCardioFitnessMedicationsUse=\"None\"/>\n")
        for i in 0..<(records + added) {
            let removed = i < records && removeEvery > 0 && i % removeEvery == removeEvery - 1
            if !removed { try emit(record(i)) }
            if compositeEvery > 0 && i % compositeEvery == compositeEvery - 1 && i < records { try emit(composite(i)) }
        }
        try emit("</HealthData>\n")
        try h.write(contentsOf: Data(buf.utf8))
    }

    /// Writes export.zip (with `__MACOSX/` and `.DS_Store` members) to `path`.
    public func writeZip(to path: String, xmlName: String = "export.xml") throws {
        let dir = NSTemporaryDirectory() + "hp-synth-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir + "/apple_health_export", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try writeXML(to: dir + "/apple_health_export/" + xmlName)
        try Data("<?xml version=\"1.0\"?><ClinicalDocument/>".utf8).write(to: URL(fileURLWithPath: dir + "/apple_health_export/export_cda.xml"))
        try? FileManager.default.removeItem(atPath: path)
        let archive = try ZIPFoundation.Archive(url: URL(fileURLWithPath: path), accessMode: .create)
        try archive.addEntry(with: "apple_health_export/" + xmlName, relativeTo: URL(fileURLWithPath: dir), compressionMethod: .deflate)
        try archive.addEntry(with: "apple_health_export/export_cda.xml", relativeTo: URL(fileURLWithPath: dir), compressionMethod: .deflate)
        for (name, bytes) in [("__MACOSX/apple_health_export/._" + xmlName, "\u{0}\u{5}\u{16}\u{7}junk"), (".DS_Store", "\u{0}\u{0}\u{0}\u{1}Bud1")] {
            let data = Data(bytes.utf8)
            try archive.addEntry(with: name, type: .file, uncompressedSize: Int64(data.count), compressionMethod: .none) { pos, size in
                data.subdata(in: Int(pos)..<Int(pos) + size)
            }
        }
    }

    func h(_ i: Int, _ salt: UInt64) -> UInt64 { SplitMix.hash(seed, UInt64(i), salt) }

    static func date(_ t: Double) -> String {
        // Local time at +0200, as phones write them.
        let local = t + 7200
        let iso = CanonicalDateText.iso(local)
        return iso + " +0200"
    }

    func device(_ i: Int) -> String {
        let addr = String(h(i % 7, 900 + deviceAddressSalt) & 0xFFFFFFFFF, radix: 16)
        return "&lt;&lt;HKDevice: 0x\(addr)&gt;, name:Apple Watch, manufacturer:Apple Inc., model:Watch, hardware:Watch6,1, software:10.1&gt;"
    }

    func record(_ i: Int) -> String {
        let (type, unit0, range) = Self.types[i % Self.types.count]
        let t = Self.start + Double(i) * 37 + Double(h(i, 1) % 20)
        var value = (range.lowerBound + SplitMix.unit(h(i, 2)) * (range.upperBound - range.lowerBound) * 1000).rounded() / 1000
        if editEvery > 0 && i % editEvery == editEvery - 1 { value += 1 }
        var unit = unit0
        if alternateUnits && unit0 == "kcal" { value *= 4.184; unit = "kJ" }
        if alternateUnits && unit0 == "km" { value /= 1.609344; unit = "mi" }
        let end = t + (unit0 == "count/min" || unit0 == "ms" ? 0 : 60)
        let v = String(value)
        var s = " <Record type=\"\(type)\" sourceName=\"Synthetic Watch\" sourceVersion=\"10.1\" device=\"\(device(i))\" unit=\"\(unit)\" creationDate=\"\(Self.date(end + 5))\" startDate=\"\(Self.date(t))\" endDate=\"\(Self.date(end))\" value=\"\(v)\""
        if type.hasSuffix("HeartRate") {
            s += ">\n  <MetadataEntry key=\"HKMetadataKeyHeartRateMotionContext\" value=\"\(h(i, 3) % 3)\"/>\n </Record>\n"
        } else {
            s += "/>\n"
        }
        return s
    }

    func composite(_ i: Int) -> String {
        let t = Self.start + Double(i) * 37 + 5
        let sys = 110 + Int(h(i, 4) % 30), dia = 70 + Int(h(i, 5) % 15)
        let d = Self.date(t)
        return """
         <Record type="HKQuantityTypeIdentifierBloodPressureSystolic" sourceName="Synthetic Cuff" sourceVersion="2.1" unit="mmHg" creationDate="\(d)" startDate="\(d)" endDate="\(d)" value="\(sys)"/>
         <Record type="HKQuantityTypeIdentifierBloodPressureDiastolic" sourceName="Synthetic Cuff" sourceVersion="2.1" unit="mmHg" creationDate="\(d)" startDate="\(d)" endDate="\(d)" value="\(dia)"/>
         <Correlation type="HKCorrelationTypeIdentifierBloodPressure" sourceName="Synthetic Cuff" sourceVersion="2.1" creationDate="\(d)" startDate="\(d)" endDate="\(d)">
          <Record type="HKQuantityTypeIdentifierBloodPressureSystolic" sourceName="Synthetic Cuff" sourceVersion="2.1" unit="mmHg" creationDate="\(d)" startDate="\(d)" endDate="\(d)" value="\(sys)"/>
          <Record type="HKQuantityTypeIdentifierBloodPressureDiastolic" sourceName="Synthetic Cuff" sourceVersion="2.1" unit="mmHg" creationDate="\(d)" startDate="\(d)" endDate="\(d)" value="\(dia)"/>
         </Correlation>
         <Workout workoutActivityType="HKWorkoutActivityTypeRunning" duration="30.5" durationUnit="min" totalDistance="\(alternateUnits ? "3.10685596118667" : "5")" totalDistanceUnit="\(alternateUnits ? "mi" : "km")" totalEnergyBurned="\(alternateUnits ? "1255.2" : "300")" totalEnergyBurnedUnit="\(alternateUnits ? "kJ" : "kcal")" sourceName="Synthetic Watch" sourceVersion="10.1" device="\(device(i))" creationDate="\(Self.date(t + 1900))" startDate="\(d)" endDate="\(Self.date(t + 1830))">
          <MetadataEntry key="HKIndoorWorkout" value="0"/>
          <MetadataEntry key="HKTimeZone" value="Europe/Berlin"/>
          <WorkoutEvent type="HKWorkoutEventTypePause" date="\(Self.date(t + 600))"/>
          <WorkoutActivity uuid="\(SplitMix.uuid(h(i, 6), h(i, 7)))" startDate="\(d)" endDate="\(Self.date(t + 1830))" duration="30.5" durationUnit="min">
           <WorkoutStatistics type="HKQuantityTypeIdentifierHeartRate" startDate="\(d)" endDate="\(Self.date(t + 1830))" average="142" minimum="101" maximum="171" unit="count/min"/>
          </WorkoutActivity>
          <WorkoutStatistics type="HKQuantityTypeIdentifierActiveEnergyBurned" startDate="\(d)" endDate="\(Self.date(t + 1830))" sum="\(alternateUnits ? "1255.2" : "300")" unit="\(alternateUnits ? "kJ" : "kcal")"/>
          <WorkoutRoute sourceName="Synthetic Watch" sourceVersion="10.1" creationDate="\(Self.date(t + 1900))" startDate="\(d)" endDate="\(Self.date(t + 1830))">
           <FileReference path="/workout-routes/route_\(i).gpx"/>
          </WorkoutRoute>
         </Workout>

        """
    }
}

/// `yyyy-MM-dd HH:mm:ss` for a Unix time (UTC fields).
enum CanonicalDateText {
    static func iso(_ t: Double) -> String {
        let s = CanonicalDate.string(t)  // 2024-06-01T09:00:00.000Z
        return String(s.prefix(10)) + " " + String(s.dropFirst(11).prefix(8))
    }
}
