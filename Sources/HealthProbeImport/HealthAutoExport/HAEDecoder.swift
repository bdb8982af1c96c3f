import HealthProbeArchive
import HealthProbeCanonical

/// Decodes a Health Auto Export JSON body (export format version 2) into
/// typed samples. Pure: bytes in, values out; every number, date and string
/// is checked, and the first bad field refuses the whole body with its path.
/// Streaming: the body is read with a pull reader, point by point, never as a
/// whole tree; memory holds one point (one workout with its route) at a time.
public struct HAEDecoder: Sendable {
    /// Largest body accepted, in bytes.
    public var maxBodyBytes = 64 << 20
    /// Longest text field accepted (names, sources, stage labels), in UTF-8 bytes.
    public var maxTextBytes = 1024
    /// Largest magnitude accepted for any number.
    public var maxMagnitude = 1e12
    /// Dates accepted: 2000-01-01 to 2100-01-01 UTC.
    public var dateRange: ClosedRange<Double> = 946_684_800...4_102_444_800
    /// `aggregation=` from the automation, recorded on each point; nil when not given.
    public var aggregation: String?

    public init(aggregation: String? = nil) { self.aggregation = aggregation }

    /// Decodes `bytes` into one payload holding every sample; throws `HAEDecodeError`
    /// naming the JSON path. Small bodies and tests: ingest streams (`scan`, `stream`).
    public func decode(_ bytes: some Collection<UInt8>) throws(HAEDecodeError) -> HAEPayload {
        let body = HAEBody.memory(bytes as? [UInt8] ?? Array(bytes))
        do { return try decode(body) } catch let e as HAEDecodeError { throw e } catch {
            throw HAEDecodeError("$", "could not be read (\(error))")
        }
    }

    /// Decodes `body` into one payload holding every sample.
    public func decode(_ body: HAEBody) throws -> HAEPayload {
        var out = HAEPayload()
        try walk(body, onSample: { out.samples.append($0) }, onUnrecognised: { out.unrecognised.append($0) })
        return out
    }

    /// Checks all of `body` and counts what it holds, keeping no sample: the first pass
    /// of a streamed ingest. Throws `HAEDecodeError` for a body that must be refused.
    public func scan(_ body: HAEBody) throws -> HAEScan {
        var scan = HAEScan()
        var latest = -Double.infinity
        func add(_ s: HAESample) {
            scan.samples += 1
            if scan.types[s.typeIdentifier] == nil { scan.types[s.typeIdentifier] = s.sample.valueKind }
            if let o = s.utcOffsetSeconds, s.sample.endDate >= latest { latest = s.sample.endDate; scan.utcOffsetSeconds = o }
            s.children.forEach(add)
        }
        try walk(body, onSample: add, onUnrecognised: { scan.unrecognisedCounts[$0.kind, default: 0] += 1 })
        return scan
    }

    /// Hands each sample of `body` to `onSample` in document order, holding one at a
    /// time: the second pass of a streamed ingest, after `scan` accepted the body.
    public func stream(_ body: HAEBody, _ onSample: (HAESample) throws -> Void) throws {
        try walk(body, onSample: onSample, onUnrecognised: { _ in })
    }

    // MARK: document

    /// The top-level members of `data` in the order their first error is reported: a
    /// body with errors in several is refused for the first of these, as when the whole
    /// tree was read first.
    static func priority(_ member: String) -> Int {
        switch member {
        case "metrics": 0
        case "workouts": 1
        default: 2 + (HAEMetricTable.keptArrays.firstIndex(of: member) ?? HAEMetricTable.keptArrays.count)
        }
    }

    /// One pass over the document. A field that is wrong refuses the body, but the rest is
    /// still read: a body that is not JSON at all is refused as such (path `$`) wherever
    /// that shows, and among wrong fields the first in `priority` order is named.
    func walk(_ body: HAEBody, onSample: (HAESample) throws -> Void, onUnrecognised: (HAEUnrecognised) throws -> Void) throws {
        guard body.count <= maxBodyBytes else { throw HAEDecodeError("$", "body is larger than \(maxBodyBytes) bytes; split the export (batch requests) or raise the limit") }
        var first: (priority: Int, error: HAEDecodeError)?
        func note(_ priority: Int, _ e: HAEDecodeError) {
            if first == nil || priority < first!.priority { first = (priority, e) }
        }
        do {
            var r = try JSONPullReader(body)
            if try r.peekKind() != .object {
                note(-1, HAEDecodeError("$", "expected an object with a \"data\" member"))
            } else {
                try r.enterObject()
                var sawData = false
                while let key = try r.nextKey() {
                    guard key == "data" else { try r.skipValue(); continue }
                    sawData = true
                    guard try r.peekKind() == .object else {
                        note(-1, HAEDecodeError("data", "missing or not an object; send export format version 2 (JSON)"))
                        try r.skipValue()
                        continue
                    }
                    try r.enterObject()
                    var unknown: [String] = []
                    while let name = try r.nextKey() {
                        do {
                            switch name {
                            case "metrics": try metrics(&r, onSample, onUnrecognised)
                            case "workouts": try workouts(&r, onSample)
                            case _ where HAEMetricTable.keptArrays.contains(name): try kept(&r, name, onUnrecognised)
                            default:
                                unknown.append(name)
                                try r.skipValue()
                            }
                        } catch let e as HAEDecodeError {
                            note(Self.priority(name), e)
                            try r.skip(toDepth: 2)
                        }
                    }
                    for name in unknown.sorted() { try onUnrecognised(HAEUnrecognised(kind: name, path: "data.\(name)")) }
                }
                if !sawData { note(-1, HAEDecodeError("data", "missing or not an object; send export format version 2 (JSON)")) }
            }
            try r.finish()
        } catch let e as JSONPullReader.Error {
            throw HAEDecodeError("$", "not JSON (\(e.description))")
        }
        if let first { throw first.error }
    }

    /// A point's members this decoder reads (the others are checked and skipped).
    static let pointKeys: Set<String> = [
        "qty", "date", "source", "units", "Min", "Avg", "Max", "systolic", "diastolic", "mealTime", "startDate", "endDate", "value",
        "totalSleep", "asleep", "core", "deep", "rem", "awake", "inBed", "sleepStart", "sleepEnd", "inBedStart", "inBedEnd",
        "latitude", "longitude", "lat", "lon", "timestamp", "altitude", "course", "speed",
    ]
    /// A workout's text, number and flag members.
    static let workoutScalars: Set<String> = ["name", "start", "end", "duration", "id", "location", "isIndoor", "source"]
    /// A workout's `{qty, units}` members.
    static let workoutMeasures: Set<String> = ["activeEnergyBurned", "totalEnergy", "distance", "intensity", "speed", "avgSpeed", "maxSpeed", "elevationUp"]

    /// The next value, an object of the members in `keep`, scalars only below it.
    private func point(_ r: inout JSONPullReader, _ path: String) throws -> [String: JSONValue] {
        try expectObject(&r, path)
        guard case .object(let o) = try r.readValue(levels: 1, stringLimit: maxTextBytes, keep: Self.pointKeys) else { return [:] }
        return o
    }

    /// Enters the next value, which must be an array.
    private func enterArray(_ r: inout JSONPullReader, _ path: String) throws {
        let k = try r.peekKind()
        guard k == .array else { throw HAEDecodeError(path, "expected an array, found \(Self.kind(k))") }
        try r.enterArray()
    }

    /// Throws unless the next value is an object (naming `path` and what is there instead).
    private func expectObject(_ r: inout JSONPullReader, _ path: String) throws {
        let k = try r.peekKind()
        guard k == .object else { throw HAEDecodeError(path, "expected an object, found \(Self.kind(k))") }
    }

    static func kind(_ k: JSONPullReader.Kind) -> String {
        switch k {
        case .null: "null"
        case .bool: "a boolean"
        case .number: "a number"
        case .string: "text"
        case .array: "an array"
        case .object: "an object"
        }
    }

    // MARK: metrics

    private func metrics(_ r: inout JSONPullReader, _ onSample: (HAESample) throws -> Void, _ onUnrecognised: (HAEUnrecognised) throws -> Void) throws {
        try enterArray(&r, "data.metrics")
        var i = 0
        while try r.nextElement() {
            let path = "data.metrics[\(i)]"
            try expectObject(&r, path)
            try r.enterObject()
            // name and units before data (as the app writes them): the points stream as they
            // are read; otherwise data is checked now and read again once the object is known.
            var head: [String: JSONValue] = [:]
            var later: JSONPullReader?
            var done = false
            while let key = try r.nextKey() {
                switch key {
                case "name", "units": head[key] = try r.readValue(levels: 0, stringLimit: maxTextBytes)
                case "data" where head["name"] != nil && head["units"] != nil:
                    try points(&r, head, path, onSample, onUnrecognised)
                    done = true
                case "data":
                    later = r
                    try r.skipValue()
                default: try r.skipValue()
                }
            }
            if !done {
                if var d = later {
                    try points(&d, head, path, onSample, onUnrecognised)
                } else {
                    _ = try text(head, "name", path)
                    _ = try optionalText(head, "units", path)
                    throw HAEDecodeError(path + ".data", "expected an array, found null")
                }
            }
            i += 1
        }
    }

    /// The metric's `data` array, next in `r`, point by point.
    private func points(_ r: inout JSONPullReader, _ head: [String: JSONValue], _ path: String,
                        _ onSample: (HAESample) throws -> Void, _ onUnrecognised: (HAEUnrecognised) throws -> Void) throws {
        let name = try text(head, "name", path)
        let units = try optionalText(head, "units", path)
        try enterArray(&r, path + ".data")
        guard let map = HAEMetricTable.metrics[name] else {
            var j = 0
            while try r.nextElement() {
                try r.skipValue()
                try onUnrecognised(HAEUnrecognised(kind: "metric:" + name, path: "\(path).data[\(j)]"))
                j += 1
            }
            if j == 0 { try onUnrecognised(HAEUnrecognised(kind: "metric:" + name, path: path)) }
            return
        }
        var j = 0
        while try r.nextElement() {
            let pp = "\(path).data[\(j)]"
            let po = try point(&r, pp)
            // Each point with the offset its date carried (the phone's zone: its local days).
            let offset: Int? = switch po["date"] ?? po["startDate"] { case .string(let t)?: HAEDate.offsetSeconds(t); default: nil }
            func emit(_ s: HAESample) throws {
                var s = s
                s.utcOffsetSeconds = offset
                try onSample(s)
            }
            switch map.shape {
            case .quantity:
                try emit(quantity(map.type, try number(po, "qty", pp), units, try date(po, "date", pp), try source(po, pp), pp))
            case .minAvgMax:
                try emit(try minAvgMax(map.type, po, units, pp))
            case .bloodPressure:
                try emit(try bloodPressure(map.type, po, units, pp))
            case .bloodGlucose:
                var s = quantity(map.type, try number(po, "qty", pp), units, try date(po, "date", pp), try source(po, pp), pp)
                if let meal = try optionalText(po, "mealTime", pp) { s.sample.metadata?["hp:meal_time"] = .string(meal) }
                try emit(s)
            case .sleep:
                try emit(try sleep(map.type, po, pp))
            }
            j += 1
        }
    }

    // MARK: kept arrays

    private func kept(_ r: inout JSONPullReader, _ name: String, _ onUnrecognised: (HAEUnrecognised) throws -> Void) throws {
        try enterArray(&r, "data.\(name)")
        var i = 0
        while try r.nextElement() {
            let path = "data.\(name)[\(i)]"
            try expectObject(&r, path)
            try r.skipValue()
            try onUnrecognised(HAEUnrecognised(kind: name, path: path))
            i += 1
        }
    }

    private func quantity(_ type: String, _ value: Double, _ units: String?, _ at: Double, _ src: SourceDescriptor?, _ path: String) -> HAESample {
        let (cv, cu) = UnitCanon.canonical(value, units)
        var s = CapturedSample(startDate: at, endDate: at, valueKind: .quantity, numericValue: cv, unit: cu, source: src)
        s.metadata = baseMetadata()
        return HAESample(typeIdentifier: type, sample: s, path: path, aggregated: aggregation.map { $0 != "none" } ?? false)
    }

    private func baseMetadata() -> [String: JSONValue] {
        var m: [String: JSONValue] = ["hp:capture": .string("health_auto_export")]
        if let aggregation { m["hp:aggregation"] = .string(aggregation) }
        return m
    }

    private func minAvgMax(_ type: String, _ o: [String: JSONValue], _ units: String?, _ path: String) throws(HAEDecodeError) -> HAESample {
        let at = try date(o, "date", path)
        let src = try source(o, path)
        if o["Avg"] == nil, o["qty"] != nil { return quantity(type, try number(o, "qty", path), units, at, src, path) }
        let mn = try number(o, "Min", path), avg = try number(o, "Avg", path), mx = try number(o, "Max", path)
        guard mn <= avg, avg <= mx else { throw HAEDecodeError(path, "Min, Avg and Max are not in order (Min <= Avg <= Max)") }
        var s = quantity(type, avg, units, at, src, path)
        s.sample.metadata?["hp:min"] = .number(UnitCanon.canonical(mn, units).0)
        s.sample.metadata?["hp:max"] = .number(UnitCanon.canonical(mx, units).0)
        return s
    }

    private func bloodPressure(_ type: String, _ o: [String: JSONValue], _ units: String?, _ path: String) throws(HAEDecodeError) -> HAESample {
        let at = try date(o, "date", path)
        let src = try source(o, path)
        let sys = quantity(HAEMetricTable.systolicType, try number(o, "systolic", path), units, at, src, path + ".systolic")
        let dia = quantity(HAEMetricTable.diastolicType, try number(o, "diastolic", path), units, at, src, path + ".diastolic")
        var c = CapturedSample(startDate: at, endDate: at, valueKind: .correlation, source: src)
        c.metadata = baseMetadata()
        return HAESample(typeIdentifier: type, sample: c, path: path, aggregated: sys.aggregated, children: [sys, dia])
    }

    private func sleep(_ type: String, _ o: [String: JSONValue], _ path: String) throws(HAEDecodeError) -> HAESample {
        let src = try source(o, path)
        if o["startDate"] != nil || o["value"] != nil {
            let start = try date(o, "startDate", path), end = try date(o, "endDate", path)
            guard end >= start else { throw HAEDecodeError(path + ".endDate", "is before startDate") }
            let label = try text(o, "value", path)
            guard let cv = HAEMetricTable.sleepValues[label] else {
                throw HAEDecodeError(path + ".value", "unknown sleep stage; expected one of \(HAEMetricTable.sleepValues.keys.sorted().joined(separator: ", "))")
            }
            var s = CapturedSample(startDate: start, endDate: end, valueKind: .category, categoryValue: cv, source: src)
            s.metadata = baseMetadata()
            s.metadata?["hp:value"] = .string(label)
            return HAESample(typeIdentifier: type, sample: s, path: path, aggregated: false)
        }
        // Aggregated nightly row: its own identity class.
        let at = try date(o, "date", path)
        var m = baseMetadata()
        for k in ["totalSleep", "asleep", "core", "deep", "rem", "awake", "inBed"] where o[k] != nil {
            let h = try number(o, k, path)
            guard (0...48).contains(h) else { throw HAEDecodeError(path + "." + k, "hours out of range 0...48") }
            m["hp:" + k] = .number(h)
        }
        var start = at, end = at
        for k in ["sleepStart", "sleepEnd", "inBedStart", "inBedEnd"] where o[k] != nil {
            let d = try date(o, k, path)
            m["hp:" + k] = .string(CanonicalDate.string(d))
            if k.hasSuffix("Start") { start = min(start, d) } else { end = max(end, d) }
        }
        var s = CapturedSample(startDate: start, endDate: max(start, end), valueKind: .other, unit: "hr", source: src, metadata: m)
        if case .number(let total)? = m["hp:totalSleep"] { s.numericValue = total }
        return HAESample(typeIdentifier: HAEMetricTable.sleepNightType, sample: s, path: path, aggregated: true)
    }

    // MARK: workouts

    private func workouts(_ r: inout JSONPullReader, _ onSample: (HAESample) throws -> Void) throws {
        try enterArray(&r, "data.workouts")
        var i = 0
        while try r.nextElement() {
            try onSample(try workout(&r, "data.workouts[\(i)]"))
            i += 1
        }
    }

    /// One workout: its fields are read first, then its heart-rate points and route
    /// (from forks of the reader, in the order the fields are checked).
    private func workout(_ r: inout JSONPullReader, _ path: String) throws -> HAESample {
        try expectObject(&r, path)
        try r.enterObject()
        var o: [String: JSONValue] = [:]
        var heartRate: JSONPullReader?, routeReader: JSONPullReader?
        while let key = try r.nextKey() {
            if key == "heartRateData" {
                heartRate = r
                try r.skipValue()
            } else if key == "route" {
                routeReader = r
                try r.skipValue()
            } else if Self.workoutScalars.contains(key) {
                o[key] = try r.readValue(levels: 0, stringLimit: maxTextBytes)
            } else if Self.workoutMeasures.contains(key) {
                o[key] = try r.readValue(levels: 1, stringLimit: maxTextBytes)
            } else {
                try r.skipValue()
            }
        }
        let name = try text(o, "name", path)
        let start = try date(o, "start", path), end = try date(o, "end", path)
        guard end >= start else { throw HAEDecodeError(path + ".end", "is before start") }
        let duration = try number(o, "duration", path)
        guard duration >= 0 else { throw HAEDecodeError(path + ".duration", "is negative") }
        var m = baseMetadata()
        m["hp:workout_activity_type"] = .string(name)
        if o["id"] != nil { m["hp:hae_id"] = .string(try text(o, "id", path)) }
        if o["location"] != nil { m["hp:location"] = .string(try text(o, "location", path)) }
        if let b = o["isIndoor"] {
            guard case .bool(let x) = b else { throw HAEDecodeError(path + ".isIndoor", "expected true or false") }
            m["hp:is_indoor"] = .bool(x)
        }
        var s = CapturedSample(startDate: start, endDate: end, valueKind: .workout, durationSeconds: duration, source: try source(o, path))
        if let e = try measure(o, "activeEnergyBurned", path) {
            let (cv, cu) = UnitCanon.canonical(e.value, e.unit)
            s.numericValue = cv
            s.unit = cu
        }
        for k in ["totalEnergy", "distance", "intensity", "speed", "avgSpeed", "maxSpeed", "elevationUp"] {
            if let x = try measure(o, k, path) {
                let (cv, cu) = UnitCanon.canonical(x.value, x.unit)
                m["hp:" + k] = .number(cv)
                if let cu { m["hp:" + k + "_unit"] = .string(cu) }
            }
        }
        s.metadata = m
        var w = HAESample(typeIdentifier: HAEMetricTable.workoutType, sample: s, path: path, aggregated: false)
        if var hr = heartRate {
            try enterArray(&hr, path + ".heartRateData")
            var i = 0
            while try hr.nextElement() {
                let pp = "\(path).heartRateData[\(i)]"
                let po = try point(&hr, pp)
                let units = try optionalText(po, "units", pp) ?? "count/min"
                var c = try minAvgMax(HAEMetricTable.workoutHeartRateType, po, units, pp)
                c.aggregated = true
                w.children.append(c)
                i += 1
            }
        }
        if var rr = routeReader { w.children.append(try route(&rr, path + ".route", start: start, end: end, src: s.source)) }
        return w
    }

    private func route(_ r: inout JSONPullReader, _ path: String, start: Double, end: Double, src: SourceDescriptor?) throws -> HAESample {
        var locations: [JSONValue] = []
        try enterArray(&r, path)
        var i = 0
        while try r.nextElement() {
            let pp = "\(path)[\(i)]"
            let o = try point(&r, pp)
            let lat = try number(o, o["latitude"] != nil ? "latitude" : "lat", pp)
            let lon = try number(o, o["longitude"] != nil ? "longitude" : "lon", pp)
            guard (-90...90).contains(lat) else { throw HAEDecodeError(pp + ".latitude", "out of range -90...90") }
            guard (-180...180).contains(lon) else { throw HAEDecodeError(pp + ".longitude", "out of range -180...180") }
            var l: [String: JSONValue] = ["latitude": .number(lat), "longitude": .number(lon),
                                          "date": .string(CanonicalDate.string(try date(o, "timestamp", pp)))]
            for k in ["altitude", "course", "speed"] where o[k] != nil { l[k] = .number(try number(o, k, pp)) }
            locations.append(.object(l))
            i += 1
        }
        var s = CapturedSample(startDate: start, endDate: end, valueKind: .route, source: src)
        s.metadata = baseMetadata()
        s.metadata?["hp:locations"] = .array(locations)
        return HAESample(typeIdentifier: HAEMetricTable.routeType, sample: s, path: path, aggregated: false)
    }

    /// `{qty, units}` (or a bare number) under `key`, if present.
    private func measure(_ o: [String: JSONValue], _ key: String, _ path: String) throws(HAEDecodeError) -> (value: Double, unit: String?)? {
        guard let v = o[key] else { return nil }
        if case .number = v { return (try number(o, key, path), nil) }
        let m = try object(v, path + "." + key)
        let value = try number(m, "qty", path + "." + key)
        return (value, try optionalText(m, "units", path + "." + key))
    }

    // MARK: checked fields

    private func object(_ v: JSONValue, _ path: String) throws(HAEDecodeError) -> [String: JSONValue] {
        guard case .object(let o) = v else { throw HAEDecodeError(path, "expected an object, found \(kind(v))") }
        return o
    }

    private func number(_ o: [String: JSONValue], _ key: String, _ path: String) throws(HAEDecodeError) -> Double {
        guard let v = o[key] else { throw HAEDecodeError(path + "." + key, "missing; expected a number") }
        guard case .number(let d) = v else { throw HAEDecodeError(path + "." + key, "expected a number, found \(kind(v))") }
        guard d.isFinite, abs(d) <= maxMagnitude else { throw HAEDecodeError(path + "." + key, "number out of range (magnitude above \(Int64(maxMagnitude)))") }
        return d
    }

    private func text(_ o: [String: JSONValue], _ key: String, _ path: String) throws(HAEDecodeError) -> String {
        guard let v = o[key] else { throw HAEDecodeError(path + "." + key, "missing; expected text") }
        guard case .string(let s) = v else { throw HAEDecodeError(path + "." + key, "expected text, found \(kind(v))") }
        guard s.utf8.count <= maxTextBytes else { throw HAEDecodeError(path + "." + key, "text longer than \(maxTextBytes) bytes") }
        guard !s.isEmpty else { throw HAEDecodeError(path + "." + key, "is empty") }
        return s
    }

    private func optionalText(_ o: [String: JSONValue], _ key: String, _ path: String) throws(HAEDecodeError) -> String? {
        if o[key] == nil || o[key] == .null { return nil }
        return try text(o, key, path)
    }

    private func source(_ o: [String: JSONValue], _ path: String) throws(HAEDecodeError) -> SourceDescriptor? {
        try optionalText(o, "source", path).map { SourceDescriptor(name: $0) }
    }

    private func date(_ o: [String: JSONValue], _ key: String, _ path: String) throws(HAEDecodeError) -> Double {
        let t = try text(o, key, path)
        guard let d = HAEDate.parse(t) else { throw HAEDecodeError(path + "." + key, "not a date of the form yyyy-MM-dd HH:mm:ss Z (2024-02-06 14:30:00 -0800)") }
        guard dateRange.contains(d) else { throw HAEDecodeError(path + "." + key, "date outside 2000-01-01...2100-01-01") }
        return CanonicalDate.normalize(d)
    }

    private func kind(_ v: JSONValue) -> String {
        switch v {
        case .null: "null"
        case .bool: "a boolean"
        case .number: "a number"
        case .string: "text"
        case .array: "an array"
        case .object: "an object"
        }
    }
}
