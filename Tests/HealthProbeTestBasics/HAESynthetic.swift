import HealthProbeCanonical

/// Synthetic Health Auto Export (format version 2) bodies, built here from the
/// documented shapes; no real data.
public enum HAESynthetic {
    public static let day = "2024-02-06"

    public static func metric(_ name: String, _ units: String, _ points: [String]) -> String {
        "{\"name\":\"\(name)\",\"units\":\"\(units)\",\"data\":[\(points.joined(separator: ","))]}"
    }

    public static func body(metrics: [String] = [], workouts: [String] = [], extra: String = "") -> [UInt8] {
        Array("{\"data\":{\"metrics\":[\(metrics.joined(separator: ","))],\"workouts\":[\(workouts.joined(separator: ","))]\(extra)}}".utf8)
    }

    /// One body with every shape the notes describe.
    public static var everyShape: [UInt8] {
        let metrics = [
            metric("step_count", "count", (0..<3).map { "{\"qty\":\(100 + $0).25,\"date\":\"\(day) 0\($0):00:00 -0800\",\"source\":\"Synthetic Watch\"}" }),
            metric("heart_rate", "count/min", ["{\"Min\":55,\"Avg\":61.5,\"Max\":70,\"date\":\"\(day) 10:00:00 -0800\",\"source\":\"Synthetic Watch\"}"]),
            metric("resting_heart_rate", "count/min", ["{\"qty\":52,\"date\":\"\(day) 00:00:00 -0800\"}"]),
            metric("active_energy", "kJ", ["{\"qty\":41.84,\"date\":\"\(day) 10:00:00 -0800\"}"]),
            metric("blood_pressure", "mmHg", ["{\"systolic\":118,\"diastolic\":76,\"date\":\"\(day) 08:00:00 -0800\"}"]),
            metric("blood_glucose", "mg/dL", ["{\"qty\":95,\"mealTime\":\"Before Meal\",\"date\":\"\(day) 07:30:00 -0800\"}"]),
            metric("sleep_analysis", "hr", [
                "{\"startDate\":\"\(day) 01:00:00 -0800\",\"endDate\":\"\(day) 02:30:00 -0800\",\"qty\":1.5,\"value\":\"Core\",\"source\":\"Synthetic Watch\"}",
                "{\"startDate\":\"\(day) 02:30:00 -0800\",\"endDate\":\"\(day) 03:00:00 -0800\",\"qty\":0.5,\"value\":\"REM\"}",
            ]),
            metric("sleep_analysis", "hr", [
                "{\"date\":\"\(day) 00:00:00 -0800\",\"totalSleep\":7.2,\"asleep\":0,\"core\":4,\"deep\":1.2,\"rem\":2,\"inBed\":8,\"sleepStart\":\"2024-02-05 23:10:00 -0800\",\"sleepEnd\":\"\(day) 06:40:00 -0800\",\"inBedStart\":\"2024-02-05 22:50:00 -0800\",\"inBedEnd\":\"\(day) 06:55:00 -0800\",\"source\":\"Synthetic Watch\"}",
            ]),
            metric("synthetic_future_metric", "count", ["{\"qty\":1,\"date\":\"\(day) 00:00:00 +0000\"}"]),
        ]
        let workout = """
        {"id":"SYN-1","name":"Outdoor Run","start":"\(day) 06:00:00 -0800","end":"\(day) 06:30:00 -0800","duration":1800,
         "isIndoor":false,"activeEnergyBurned":{"qty":300,"units":"kcal"},"distance":{"qty":5,"units":"km"},
         "heartRateData":[{"Min":100,"Avg":140,"Max":170,"date":"\(day) 06:00:00 -0800","units":"count/min"}],
         "route":[{"latitude":47.1,"longitude":8.2,"altitude":400,"course":10,"speed":3,"timestamp":"\(day) 06:00:01 -0800"},
                  {"lat":47.2,"lon":8.3,"altitude":401,"timestamp":"\(day) 06:00:02 -0800"}]}
        """
        let noSource = "{\"id\":\"SYN-2\",\"name\":\"Yoga\",\"start\":\"\(day) 18:00:00 +0000\",\"end\":\"\(day) 18:20:00 +0000\",\"duration\":1200}"
        let newer = ["stateOfMind", "medications", "symptoms", "cycleTracking", "ecg", "heartRateNotifications"]
            .map { ",\"\($0)\":[{\"start\":\"\(day) 09:00:00 +0000\"}]" }.joined()
        return body(metrics: metrics, workouts: [workout, noSource], extra: newer)
    }
}


extension HAESynthetic {
    /// `yyyy-MM-dd HH:mm:ss +0000` of Unix seconds.
    public static func text(_ t: Double) -> String {
        let iso = CanonicalDate.string(t)
        return String(iso.prefix(10)) + " " + String(iso.dropFirst(11).prefix(8)) + " +0000"
    }

    /// A body of one metric with a `qty` point at each of `times`.
    public static func points(_ name: String, _ units: String, at times: [Double], qty: Double = 100) -> [UInt8] {
        body(metrics: [metric(name, units, times.map { "{\"qty\":\(qty),\"date\":\"\(text($0))\",\"source\":\"Synthetic Watch\"}" })])
    }
}
