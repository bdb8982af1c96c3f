import HealthProbeArchive
import HealthProbeCanonical

/// Decodes a Health Auto Export JSON body (export format version 2) into
/// typed samples. Pure: bytes in, values out; every number, date and string
/// is checked, and the first bad field refuses the whole body with its path.
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

    /// Decodes `bytes`; throws `HAEDecodeError` naming the JSON path.
    public func decode(_ bytes: some Collection<UInt8>) throws(HAEDecodeError) -> HAEPayload {
        guard bytes.count <= maxBodyBytes else { throw HAEDecodeError("$", "body is larger than \(maxBodyBytes) bytes; split the export (batch requests) or raise the limit") }
        let root: JSONValue
        do { root = try JSONParser.parse(bytes) } catch { throw HAEDecodeError("$", "not JSON (\(error.description))") }
        guard case .object(let top) = root else { throw HAEDecodeError("$", "expected an object with a \"data\" member") }
        guard case .object(let data)? = top["data"] else { throw HAEDecodeError("data", "missing or not an object; send export format version 2 (JSON)") }
        var out = HAEPayload()
        if let m = data["metrics"] {
            for (i, metric) in try array(m, "data.metrics").enumerated() {
                try decodeMetric(metric, "data.metrics[\(i)]", into: &out)
            }
        }
        if let w = data["workouts"] {
            for (i, workout) in try array(w, "data.workouts").enumerated() {
                out.samples.append(try decodeWorkout(workout, "data.workouts[\(i)]"))
            }
        }
        for name in HAEMetricTable.keptArrays {
            guard let v = data[name] else { continue }
            for (i, item) in try array(v, "data.\(name)").enumerated() {
                _ = try object(item, "data.\(name)[\(i)]")
                out.unrecognised.append(HAEUnrecognised(kind: name, path: "data.\(name)[\(i)]"))
            }
        }
        for key in data.keys.sorted() where key != "metrics" && key != "workouts" && !HAEMetricTable.keptArrays.contains(key) {
            out.unrecognised.append(HAEUnrecognised(kind: key, path: "data.\(key)"))
        }
        return out
    }

    // MARK: metrics

    private func decodeMetric(_ v: JSONValue, _ path: String, into out: inout HAEPayload) throws(HAEDecodeError) {
        let o = try object(v, path)
        let name = try text(o, "name", path)
        let units = try optionalText(o, "units", path)
        let points = try array(o["data"] ?? .null, path + ".data")
        guard let map = HAEMetricTable.metrics[name] else {
            for j in points.indices { out.unrecognised.append(HAEUnrecognised(kind: "metric:" + name, path: "\(path).data[\(j)]")) }
            if points.isEmpty { out.unrecognised.append(HAEUnrecognised(kind: "metric:" + name, path: path)) }
            return
        }
        for (j, p) in points.enumerated() {
            let pp = "\(path).data[\(j)]"
            let po = try object(p, pp)
            switch map.shape {
            case .quantity:
                out.samples.append(quantity(map.type, try number(po, "qty", pp), units, try date(po, "date", pp), try source(po, pp), pp))
            case .minAvgMax:
                out.samples.append(try minAvgMax(map.type, po, units, pp))
            case .bloodPressure:
                out.samples.append(try bloodPressure(map.type, po, units, pp))
            case .bloodGlucose:
                var s = quantity(map.type, try number(po, "qty", pp), units, try date(po, "date", pp), try source(po, pp), pp)
                if let meal = try optionalText(po, "mealTime", pp) { s.sample.metadata?["hp:meal_time"] = .string(meal) }
                out.samples.append(s)
            case .sleep:
                out.samples.append(try sleep(map.type, po, pp))
            }
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

    private func decodeWorkout(_ v: JSONValue, _ path: String) throws(HAEDecodeError) -> HAESample {
        let o = try object(v, path)
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
        if let hr = o["heartRateData"] {
            for (i, p) in try array(hr, path + ".heartRateData").enumerated() {
                let pp = "\(path).heartRateData[\(i)]"
                let po = try object(p, pp)
                let units = try optionalText(po, "units", pp) ?? "count/min"
                var c = try minAvgMax(HAEMetricTable.workoutHeartRateType, po, units, pp)
                c.aggregated = true
                w.children.append(c)
            }
        }
        if let r = o["route"] { w.children.append(try route(r, path + ".route", start: start, end: end, src: s.source)) }
        return w
    }

    private func route(_ v: JSONValue, _ path: String, start: Double, end: Double, src: SourceDescriptor?) throws(HAEDecodeError) -> HAESample {
        var locations: [JSONValue] = []
        for (i, p) in try array(v, path).enumerated() {
            let pp = "\(path)[\(i)]"
            let o = try object(p, pp)
            let lat = try number(o, o["latitude"] != nil ? "latitude" : "lat", pp)
            let lon = try number(o, o["longitude"] != nil ? "longitude" : "lon", pp)
            guard (-90...90).contains(lat) else { throw HAEDecodeError(pp + ".latitude", "out of range -90...90") }
            guard (-180...180).contains(lon) else { throw HAEDecodeError(pp + ".longitude", "out of range -180...180") }
            var l: [String: JSONValue] = ["latitude": .number(lat), "longitude": .number(lon),
                                          "date": .string(CanonicalDate.string(try date(o, "timestamp", pp)))]
            for k in ["altitude", "course", "speed"] where o[k] != nil { l[k] = .number(try number(o, k, pp)) }
            locations.append(.object(l))
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

    private func array(_ v: JSONValue, _ path: String) throws(HAEDecodeError) -> [JSONValue] {
        guard case .array(let a) = v else { throw HAEDecodeError(path, "expected an array, found \(kind(v))") }
        return a
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
