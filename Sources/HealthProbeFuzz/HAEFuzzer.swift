import HealthProbeCanonical
import HealthProbeImport

/// A Health Auto Export body: the streaming decoder never traps and refuses only with a
/// `HAEDecodeError`; it refuses as not JSON exactly what `JSONParser` refuses; read in
/// 7-byte chunks (every value straddling chunks) it gives the same samples or the same
/// error as from one buffer; what it accepts holds dates in range, ends not before
/// starts and only finite numbers.
enum HAEFuzzer {
    static func run(_ data: UnsafeRawBufferPointer) -> String? {
        let decoder = HAEDecoder(aggregation: "none")
        let bytes = Array(data)
        let whole: Result<HAEPayload, HAEDecodeError> = Result { () throws(HAEDecodeError) in try decoder.decode(bytes) }
        let chunked: Result<HAEPayload, any Error> = Result { try decoder.decode(.memory(bytes, chunkBytes: 7)) }
        switch (whole, chunked) {
        case (.success(let a), .success(let b)):
            if a.samples != b.samples || a.unrecognised != b.unrecognised { return "7-byte chunks decode other samples than one buffer" }
        case (.failure(let a), .failure(let b)):
            guard let b = b as? HAEDecodeError else { return "7-byte chunks fail with \(type(of: b)), not HAEDecodeError" }
            if a != b { return "7-byte chunks refuse at \(b.path), one buffer at \(a.path)" }
        default: return "7-byte chunks and one buffer disagree on accepting the body"
        }
        let strictJSON = (try? JSONParser.parse(bytes)) != nil
        if case .failure(let e) = whole {
            let notJSON = e.path == "$" && e.reason.hasPrefix("not JSON")
            if strictJSON && notJSON { return "JSON that JSONParser accepts refused as not JSON: \(e.reason)" }
            if !strictJSON && !notJSON && !e.reason.hasPrefix("body is larger") { return "JSON that JSONParser refuses refused at \(e.path) instead" }
        } else if !strictJSON {
            return "JSON that JSONParser refuses was accepted"
        }
        guard case .success(let payload) = whole else { return nil }
        func check(_ s: HAESample) -> String? {
            let x = s.sample
            guard decoder.dateRange.contains(x.startDate), decoder.dateRange.contains(x.endDate) else { return "\(s.path): date out of range accepted" }
            guard x.endDate >= x.startDate else { return "\(s.path): end before start accepted" }
            if let v = x.numericValue, !v.isFinite { return "\(s.path): non-finite value accepted" }
            if let d = x.durationSeconds, !(d.isFinite && d >= 0) { return "\(s.path): bad duration accepted" }
            for c in s.children { if let f = check(c) { return f } }
            return nil
        }
        for s in payload.samples { if let f = check(s) { return f } }
        return nil
    }

    /// Synthetic seeds: one body of each point shape.
    static let seeds: [(String, String)] = [
        ("hae-quantity", #"{"data":{"metrics":[{"name":"step_count","units":"count","data":[{"qty":12.5,"date":"2024-02-06 14:30:00 -0800","source":"Synthetic"}]}]}}"#),
        ("hae-heart-rate", #"{"data":{"metrics":[{"name":"heart_rate","units":"count/min","data":[{"Min":50,"Avg":60,"Max":70,"date":"2024-02-06 14:30:00 +0000"}]}]}}"#),
        ("hae-blood-pressure", #"{"data":{"metrics":[{"name":"blood_pressure","units":"mmHg","data":[{"systolic":118,"diastolic":76,"date":"2024-02-06 14:30:00 +0000"}]}]}}"#),
        ("hae-glucose", #"{"data":{"metrics":[{"name":"blood_glucose","units":"mg/dL","data":[{"qty":95,"mealTime":"Before Meal","date":"2024-02-06 14:30:00 +0000"}]}]}}"#),
        ("hae-sleep", #"{"data":{"metrics":[{"name":"sleep_analysis","units":"hr","data":[{"startDate":"2024-02-06 01:00:00 +0000","endDate":"2024-02-06 02:00:00 +0000","qty":1,"value":"Deep"},{"date":"2024-02-06 00:00:00 +0000","totalSleep":7,"sleepStart":"2024-02-05 23:00:00 +0000","sleepEnd":"2024-02-06 06:00:00 +0000"}]}]}}"#),
        ("hae-workout", #"{"data":{"workouts":[{"id":"S","name":"Run","start":"2024-02-06 06:00:00 +0000","end":"2024-02-06 06:30:00 +0000","duration":1800,"activeEnergyBurned":{"qty":300,"units":"kcal"},"heartRateData":[{"Min":90,"Avg":120,"Max":150,"date":"2024-02-06 06:00:00 +0000","units":"count/min"}],"route":[{"latitude":47,"longitude":8,"altitude":400,"timestamp":"2024-02-06 06:00:01 +0000"}]}],"ecg":[{}]}}"#),
        ("hae-unrecognised", #"{"data":{"metrics":[{"name":"synthetic_metric","units":"count","data":[{"qty":1,"date":"2024-02-06 14:30:00 +0000"}]}],"stateOfMind":[{}],"medications":[{}],"symptoms":[{}]}}"#),
        ("hae-empty", #"{"data":{"metrics":[],"workouts":[]}}"#),
        ("hae-workout-no-source", #"{"data":{"workouts":[{"id":"S","name":"Yoga","start":"2024-02-06 18:00:00 +0000","end":"2024-02-06 18:20:00 +0000","duration":1200,"distance":{"qty":0,"units":"km"}}]}}"#),
        ("hae-legacy-route", #"{"data":{"workouts":[{"name":"Walk","start":"2024-02-06 06:00:00 -0800","end":"2024-02-06 06:30:00 -0800","duration":1800,"route":[{"lat":47,"lon":8,"altitude":400,"timestamp":"2024-02-06 06:00:01 -0800"}]}],"cycleTracking":[{}],"ecg":[{}],"heartRateNotifications":[{}]}}"#),
    ]
}
