import Foundation
import HealthProbeArchive
import HealthProbeCanonical

/// Turns the element events of export.xml (`ExportXMLStream`) into `ImportedSample`s.
/// Holds only the element being built (and its children), never the document.
final class ExportParser: XMLEventHandler {
    var onSample: (ImportedSample) throws -> Void = { _ in }
    var onRejection: (Rejection) -> Void = { _ in }
    var onExportDate: (Double, Int?) -> Void = { _, _ in }
    var onMe: ([String: String]) -> Void = { _ in }
    var onLocale: (String) -> Void = { _ in }
    /// The first error thrown by `onSample` (parsing is aborted).
    private(set) var callbackError: (any Error)?
    private(set) var sawHealthData = false
    /// The closing `</HealthData>` was read: the document is complete.
    private(set) var sawEnd = false
    /// The first XML error libxml2 reported (it runs in recovery mode, so this
    /// is how a truncated or broken document is noticed), with its position.
    private(set) var firstXMLError: (line: Int, column: Int, code: Int)?
    private(set) var exportOffset: Int?

    /// The stream feeding this parser: stopped when a callback fails.
    weak var stream: ExportXMLStream?
    private let deviceMemo = DeviceString.Memo()

    /// An element under construction.
    private final class Frame {
        let name: String
        let attributes: XMLAttributes
        let line: Int
        let column: Int
        var metadata: [String: JSONValue] = [:]
        var beats: [JSONValue] = []
        var events: [JSONValue] = []
        var statistics: [JSONValue] = []
        var activities: [JSONValue] = []
        var locations: [JSONValue] = []
        var fileReference: String?
        var members: [ImportedChild] = []
        var routes: [ImportedChild] = []
        var others: [JSONValue] = []
        init(_ name: String, _ attributes: XMLAttributes, _ line: Int, _ column: Int) {
            self.name = name
            self.attributes = attributes
            self.line = line
            self.column = column
        }
    }
    private var stack: [Frame] = []

    func startElement(_ name: String, attributes: XMLAttributes, line: Int, column: Int) {
        if name == "HealthData" {
            sawHealthData = true
            if let l = attributes["locale"] { onLocale(l) }
            return
        }
        stack.append(Frame(name, attributes, line, column))
    }

    func xmlError(code: Int, line: Int, column: Int) {
        if firstXMLError == nil { firstXMLError = (line, column, code) }
    }

    func endElement(_ name: String) {
        if name == "HealthData" && stack.isEmpty { sawEnd = true }
        guard name != "HealthData", let frame = stack.popLast() else { return }
        let parent = stack.last
        do {
            try finish(frame, parent: parent)
        } catch {
            callbackError = error
            stream?.stop()
        }
    }

    private func reject(_ f: Frame, _ reason: String, type: String? = nil) {
        onRejection(Rejection(line: f.line, column: f.column, element: f.name, typeIdentifier: type ?? f.attributes["type"], reason: reason))
    }

    private func attributesJSON(_ a: XMLAttributes, dates: Set<String> = []) -> JSONValue {
        var o: [String: JSONValue] = [:]
        for (k, v) in a {
            o[k] = .string(dates.contains(k) ? Self.canonicalText(v) : v)
        }
        return .object(o)
    }

    /// A date attribute as canonical text when it is one the archive holds (`BundleItemSchema.holds`:
    /// a sample dated outside them would have the server refuse the chain's bundles), else as written.
    static func canonicalText(_ v: String) -> String {
        guard let t = CanonicalDate.parse(v), BundleItemSchema.holds(date: t) else { return v }
        return CanonicalDate.string(t)
    }

    private func finish(_ f: Frame, parent: Frame?) throws {
        switch f.name {
        case "ExportDate":
            if let v = f.attributes["value"], let t = CanonicalDate.parse(v) {
                // Not recorded (the notes would hold it clamped to a year the archive writes): refused as a record's date is.
                guard BundleItemSchema.holds(date: t) else { reject(f, "value " + BundleItemSchema.dateNotHeld); return }
                exportOffset = Self.offsetSeconds(v)
                onExportDate(t, exportOffset)
            } else { reject(f, "value is missing or not a date") }
        case "Me":
            onMe(f.attributes.dictionary)
        case "MetadataEntry":
            guard let p = parent, let k = f.attributes["key"] else { return }
            p.metadata[k] = .string(f.attributes["value"] ?? "")
        case "InstantaneousBeatsPerMinute":
            // Nested in HeartRateVariabilityMetadataList inside the Record.
            if let record = stack.last(where: { $0.name == "Record" }) {
                record.beats.append(attributesJSON(f.attributes))
            }
        case "HeartRateVariabilityMetadataList":
            break
        case "WorkoutEvent":
            parent?.events.append(attributesJSON(f.attributes, dates: ["date"]))
        case "WorkoutStatistics":
            parent?.statistics.append(statisticsJSON(f.attributes))
        case "FileReference":
            parent?.fileReference = f.attributes["path"]
        case "Location":
            parent?.locations.append(attributesJSON(f.attributes, dates: ["date"]))
        case "WorkoutActivity":
            var o: [String: JSONValue] = ["attributes": attributesJSON(f.attributes, dates: ["startDate", "endDate"])]
            if !f.metadata.isEmpty { o["metadata"] = .object(f.metadata) }
            if !f.events.isEmpty { o["events"] = .array(f.events) }
            if !f.statistics.isEmpty { o["statistics"] = .array(f.statistics) }
            parent?.activities.append(.object(o))
        case "WorkoutRoute":
            guard let p = parent, let route = routeSample(f) else { return }
            p.routes.append(ImportedChild(kind: .workoutRoute, typeIdentifier: Self.routeType, sample: route, alsoEmitted: true))
        case "Record":
            guard let s = recordSample(f) else { return }
            if let p = parent, p.name == "Correlation" {
                p.members.append(ImportedChild(kind: .correlationMember, typeIdentifier: s.typeIdentifier, sample: s.sample, alsoEmitted: false))
            } else if parent == nil {
                try onSample(s)
            }
        case "Correlation":
            guard parent == nil, var s = baseSample(f, kind: .correlation) else { return }
            s.children = f.members
            try onSample(s)
        case "Workout":
            guard parent == nil, let s = workoutSample(f) else { return }
            for r in f.routes { try onSample(ImportedSample(typeIdentifier: r.typeIdentifier, sample: r.sample, line: f.line)) }
            try onSample(s)
        case "ActivitySummary":
            guard parent == nil, let s = activitySummary(f) else { return }
            try onSample(s)
        default:
            if parent == nil {
                // Elements this version does not model (ClinicalRecord, Audiogram, VisionPrescription, ...):
                // archived generically with all attributes and child elements.
                if let s = genericSample(f) { try onSample(s) }
            } else {
                parent?.others.append(.object(["element": .string(f.name), "attributes": attributesJSON(f.attributes), "children": .array(f.others)]))
            }
        }
    }

    static let routeType = "HKWorkoutRouteTypeIdentifier"
    static let activitySummaryType = "HKActivitySummaryTypeIdentifier"

    private func dates(_ f: Frame, required: Bool = true) -> (Double, Double)? {
        guard let s = f.attributes["startDate"].flatMap(CanonicalDate.parse) else {
            reject(f, f.attributes["startDate"] == nil ? "startDate is missing" : "startDate is not a date")
            return nil
        }
        let e: Double
        if let raw = f.attributes["endDate"] {
            guard let t = CanonicalDate.parse(raw) else { reject(f, "endDate is not a date"); return nil }
            e = t
        } else { e = s }
        guard e >= s else { reject(f, "endDate is before startDate"); return nil }
        guard BundleItemSchema.holds(date: s) else { reject(f, "startDate " + BundleItemSchema.dateNotHeld); return nil }
        guard BundleItemSchema.holds(date: e) else { reject(f, "endDate " + BundleItemSchema.dateNotHeld); return nil }
        return (s, e)
    }

    private func source(_ f: Frame) -> SourceDescriptor? {
        let name = f.attributes["sourceName"], version = f.attributes["sourceVersion"]
        if name == nil && version == nil { return nil }
        return SourceDescriptor(name: name, version: version)
    }

    private func baseSample(_ f: Frame, kind: ValueKind) -> ImportedSample? {
        guard let type = f.attributes["type"], !type.isEmpty else { reject(f, "type is missing"); return nil }
        guard let (start, end) = dates(f) else { return nil }
        var s = CapturedSample(startDate: start, endDate: end, valueKind: kind)
        s.creationDate = f.attributes["creationDate"].flatMap(CanonicalDate.parse)
        if let c = s.creationDate, !BundleItemSchema.holds(date: c) { reject(f, "creationDate " + BundleItemSchema.dateNotHeld); return nil }
        // Weak context only: the time window, to report an edited record as changed.
        s.semanticWindow = SemanticWindow(start: start, end: end)
        s.source = source(f)
        s.device = f.attributes["device"].flatMap(deviceMemo.parse)
        var meta = f.metadata
        if !f.beats.isEmpty { meta["hp:beats"] = .array(f.beats) }
        if !f.others.isEmpty { meta["hp:children"] = .array(f.others) }
        s.metadata = meta.isEmpty ? nil : meta
        return ImportedSample(typeIdentifier: type, sample: s, line: f.line)
    }

    private func recordSample(_ f: Frame) -> ImportedSample? {
        let type = f.attributes["type"] ?? ""
        let kind: ValueKind = type.hasPrefix("HKCategoryTypeIdentifier") ? .category : (type.hasPrefix("HKQuantityTypeIdentifier") ? .quantity : .other)
        guard var s = baseSample(f, kind: kind) else { return nil }
        let raw = f.attributes["value"]
        switch kind {
        case .quantity:
            guard let r = raw, let v = Double(r), v.isFinite else {
                reject(f, raw == nil ? "value is missing" : "value is not a number")
                return nil
            }
            let (cv, cu) = UnitCanon.canonical(v, f.attributes["unit"])
            s.sample.numericValue = cv
            s.sample.unit = cu
        case .category:
            if let r = raw {
                // A number a bundle carries exactly (`BundleItemSchema.exactIntegers`), else kept as text.
                if let v = Int64(r), BundleItemSchema.exactIntegers.contains(v) { s.sample.categoryValue = Int(v) } else {
                    s.sample.categoryValue = CategoryValues.known[r]
                    var m = s.sample.metadata ?? [:]
                    m["hp:value"] = .string(r)
                    s.sample.metadata = m
                }
            }
            s.sample.unit = f.attributes["unit"]
        default:
            var m = s.sample.metadata ?? [:]
            if let r = raw { m["hp:value"] = .string(r) }
            if let u = f.attributes["unit"] { m["hp:unit"] = .string(u) }
            s.sample.metadata = m.isEmpty ? nil : m
        }
        return s
    }

    private func statisticsJSON(_ a: XMLAttributes) -> JSONValue {
        var o: [String: JSONValue] = [:]
        let unit = a["unit"]
        var canonicalUnit: String?
        for (k, v) in a {
            switch k {
            case "average", "minimum", "maximum", "sum":
                if let d = Double(v) {
                    let (cv, cu) = UnitCanon.canonical(d, unit)
                    o[k] = .number(cv)
                    canonicalUnit = cu
                } else { o[k] = .string(v) }
            case "startDate", "endDate":
                o[k] = .string(Self.canonicalText(v))
            case "unit": break
            default: o[k] = .string(v)
            }
        }
        if let u = canonicalUnit ?? unit { o["unit"] = .string(u) }
        return .object(o)
    }

    private func workoutSample(_ f: Frame) -> ImportedSample? {
        let activity = f.attributes["workoutActivityType"] ?? ""
        let frame = Frame(f.name, f.attributes.adding(["type": "HKWorkoutTypeIdentifier"]), f.line, f.column)
        frame.metadata = f.metadata
        guard var s = baseSample(frame, kind: .workout) else { return nil }
        s.typeIdentifier = "HKWorkoutTypeIdentifier"
        s.sample.workoutActivityType = WorkoutActivityTypes.known[activity]
        if let d = f.attributes["duration"].flatMap(Double.init) {
            let unit = f.attributes["durationUnit"] ?? "min"
            s.sample.durationSeconds = UnitCanon.round12(d * (unit == "min" ? 60 : unit == "hr" ? 3600 : 1))
        }
        var m = s.sample.metadata ?? [:]
        m["hp:workout_activity_type"] = .string(activity)
        if let e = f.attributes["totalEnergyBurned"].flatMap(Double.init) {
            let (cv, cu) = UnitCanon.canonical(e, f.attributes["totalEnergyBurnedUnit"])
            s.sample.numericValue = cv
            s.sample.unit = cu
        }
        if let d = f.attributes["totalDistance"].flatMap(Double.init) {
            let (cv, cu) = UnitCanon.canonical(d, f.attributes["totalDistanceUnit"])
            m["hp:total_distance"] = .number(cv)
            if let cu { m["hp:total_distance_unit"] = .string(cu) }
        }
        for (k, v) in f.attributes where k.hasPrefix("totalSwimming") || k.hasPrefix("totalFlights") {
            m["hp:" + k] = .string(v)
        }
        if !f.events.isEmpty { m["hp:workout_events"] = .array(f.events) }
        if !f.statistics.isEmpty { m["hp:workout_statistics"] = .array(f.statistics) }
        if !f.activities.isEmpty { m["hp:workout_activities"] = .array(f.activities) }
        s.sample.metadata = m
        s.children = f.routes
        return s
    }

    private func routeSample(_ f: Frame) -> CapturedSample? {
        let frame = Frame(f.name, f.attributes.adding(["type": Self.routeType]), f.line, f.column)
        frame.metadata = f.metadata
        guard var s = baseSample(frame, kind: .route) else { return nil }
        var m = s.sample.metadata ?? [:]
        if let p = f.fileReference { m["hp:file_reference"] = .string(p) }
        if !f.locations.isEmpty { m["hp:locations"] = .array(f.locations) }
        s.sample.metadata = m.isEmpty ? nil : m
        return s.sample
    }

    private func activitySummary(_ f: Frame) -> ImportedSample? {
        guard let day = f.attributes["dateComponents"], let midnightUTC = CanonicalDate.parse(day + "T00:00:00Z") else {
            reject(f, "dateComponents is missing or not a date", type: Self.activitySummaryType)
            return nil
        }
        // The summary's day is local to the phone: use the export's UTC offset.
        let start = midnightUTC - Double(exportOffset ?? 0)
        guard BundleItemSchema.holds(date: start), BundleItemSchema.holds(date: start + 86_400) else {
            reject(f, "dateComponents " + BundleItemSchema.dateNotHeld, type: Self.activitySummaryType)
            return nil
        }
        var s = CapturedSample(startDate: start, endDate: start + 86_400, valueKind: .activitySummary)
        var m: [String: JSONValue] = [:]
        for (k, v) in f.attributes where k != "activeEnergyBurnedUnit" {
            if k.hasPrefix("activeEnergyBurned"), let d = Double(v) {
                m[k] = .number(UnitCanon.canonical(d, f.attributes["activeEnergyBurnedUnit"]).0)
            } else { m[k] = .string(v) }
        }
        if let e = f.attributes["activeEnergyBurned"].flatMap(Double.init) {
            let (cv, cu) = UnitCanon.canonical(e, f.attributes["activeEnergyBurnedUnit"])
            s.numericValue = cv
            s.unit = cu
        }
        s.metadata = m
        return ImportedSample(typeIdentifier: Self.activitySummaryType, sample: s, line: f.line)
    }

    private func genericSample(_ f: Frame) -> ImportedSample? {
        let type = f.attributes["type"] ?? ("hp:element:" + f.name)
        let dateKeys = ["startDate", "date", "dateIssued", "receivedDate", "creationDate"]
        guard let start = dateKeys.lazy.compactMap({ f.attributes[$0].flatMap(CanonicalDate.parse) }).first else {
            reject(f, "no date attribute", type: type)
            return nil
        }
        let end = f.attributes["endDate"].flatMap(CanonicalDate.parse).map { max($0, start) } ?? start
        guard BundleItemSchema.holds(date: start), BundleItemSchema.holds(date: end) else {
            reject(f, "its date " + BundleItemSchema.dateNotHeld, type: type)
            return nil
        }
        var s = CapturedSample(startDate: start, endDate: end, valueKind: .other)
        s.source = source(f)
        var m = f.metadata
        m["hp:element"] = .string(f.name)
        m["hp:attributes"] = attributesJSON(f.attributes)
        if !f.others.isEmpty { m["hp:children"] = .array(f.others) }
        s.metadata = m
        return ImportedSample(typeIdentifier: type, sample: s, line: f.line)
    }

    /// Seconds east of UTC in "yyyy-MM-dd HH:mm:ss +0100".
    static func offsetSeconds(_ text: String) -> Int? {
        let b = Array(text.utf8)
        guard b.count >= 5 else { return nil }
        let tail = b.suffix(5)
        guard let sign = tail.first, sign == UInt8(ascii: "+") || sign == UInt8(ascii: "-") else { return nil }
        let digits = tail.dropFirst().map { Int($0) - 48 }
        guard digits.allSatisfy({ (0...9).contains($0) }) else { return nil }
        let minutes = digits[2] * 10 + digits[3]
        let v = (digits[0] * 10 + digits[1]) * 3600 + minutes * 60
        // Real offsets only (±18:00, as a bundle's observation carries them): no offset otherwise.
        guard minutes < 60, v <= 64_800 else { return nil }
        return sign == UInt8(ascii: "-") ? -v : v
    }
}

/// Category value names Apple writes in exports, mapped to HealthKit's raw values.
enum CategoryValues {
    static let known: [String: Int] = [
        "HKCategoryValueSleepAnalysisInBed": 0, "HKCategoryValueSleepAnalysisAsleep": 1,
        "HKCategoryValueSleepAnalysisAsleepUnspecified": 1, "HKCategoryValueSleepAnalysisAwake": 2,
        "HKCategoryValueSleepAnalysisAsleepCore": 3, "HKCategoryValueSleepAnalysisAsleepDeep": 4,
        "HKCategoryValueSleepAnalysisAsleepREM": 5,
        "HKCategoryValueAppleStandHourStood": 0, "HKCategoryValueAppleStandHourIdle": 1,
        "HKCategoryValueNotApplicable": 0,
    ]
}

/// Common workout activity type names mapped to HKWorkoutActivityType raw values.
enum WorkoutActivityTypes {
    static let known: [String: Int] = [
        "HKWorkoutActivityTypeCycling": 13, "HKWorkoutActivityTypeDance": 14, "HKWorkoutActivityTypeElliptical": 16,
        "HKWorkoutActivityTypeFunctionalStrengthTraining": 20, "HKWorkoutActivityTypeHiking": 24,
        "HKWorkoutActivityTypeRowing": 35, "HKWorkoutActivityTypeRunning": 37, "HKWorkoutActivityTypeSwimming": 46,
        "HKWorkoutActivityTypeTraditionalStrengthTraining": 50, "HKWorkoutActivityTypeWalking": 52,
        "HKWorkoutActivityTypeYoga": 57, "HKWorkoutActivityTypeCoreTraining": 59, "HKWorkoutActivityTypeHighIntensityIntervalTraining": 63,
        "HKWorkoutActivityTypeMindAndBody": 45, "HKWorkoutActivityTypeOther": 3000,
    ]
}
