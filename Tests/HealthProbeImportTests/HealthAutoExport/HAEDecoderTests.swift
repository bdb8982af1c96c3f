import HealthProbeArchive
import HealthProbeCanonical
import HealthProbeTestSupport
import Testing
@testable import HealthProbeImport

@Suite("Health Auto Export decoder")
struct HAEDecoderTests {
    @Test("every documented shape decodes to samples of its HealthKit type; newer arrays and unknown metrics are counted, not dropped")
    func everyShape() throws {
        let p = try HAEDecoder(aggregation: "minutes").decode(HAESynthetic.everyShape)
        let c = p.countsByType
        #expect(c["HKQuantityTypeIdentifierStepCount"] == 3)
        #expect(c["HKQuantityTypeIdentifierHeartRate"] == 2) // one metric point + one workout point
        #expect(c["HKQuantityTypeIdentifierRestingHeartRate"] == 1)
        #expect(c["HKCorrelationTypeIdentifierBloodPressure"] == 1)
        #expect(c["HKQuantityTypeIdentifierBloodPressureSystolic"] == 1 && c["HKQuantityTypeIdentifierBloodPressureDiastolic"] == 1)
        #expect(c["HKQuantityTypeIdentifierBloodGlucose"] == 1)
        #expect(c["HKCategoryTypeIdentifierSleepAnalysis"] == 2)
        #expect(c["hp:hae:sleep_analysis_night"] == 1)
        #expect(c["HKWorkoutTypeIdentifier"] == 2 && c["HKWorkoutRouteTypeIdentifier"] == 1)
        let u = p.unrecognisedCounts
        #expect(u["metric:synthetic_future_metric"] == 1)
        for name in ["stateOfMind", "medications", "symptoms", "cycleTracking", "ecg", "heartRateNotifications"] { #expect(u[name] == 1, "\(name)") }

        let steps = p.samples.filter { $0.typeIdentifier == "HKQuantityTypeIdentifierStepCount" }
        #expect(steps[0].sample.numericValue == 100.25 && steps[0].sample.unit == "count")
        #expect(steps[0].sample.startDate == 1_707_206_400) // 2024-02-06 00:00 -0800 = 08:00Z
        #expect(steps[0].sample.source?.name == "Synthetic Watch")
        #expect(steps[0].path == "data.metrics[0].data[0]" && steps[0].aggregated)
        let hr = p.samples.first { $0.typeIdentifier == "HKQuantityTypeIdentifierHeartRate" }!
        #expect(hr.sample.numericValue == 61.5 && hr.sample.metadata?["hp:min"] == .number(55) && hr.sample.metadata?["hp:max"] == .number(70))
        let energy = p.samples.first { $0.typeIdentifier == "HKQuantityTypeIdentifierActiveEnergyBurned" }!
        #expect(energy.sample.unit == "kcal" && energy.sample.numericValue == 10)
        let glucose = p.samples.first { $0.typeIdentifier == "HKQuantityTypeIdentifierBloodGlucose" }!
        #expect(glucose.sample.metadata?["hp:meal_time"] == .string("Before Meal"))
        let stages = p.samples.filter { $0.typeIdentifier == "HKCategoryTypeIdentifierSleepAnalysis" }.map(\.sample.categoryValue)
        #expect(stages == [3, 5])
        let night = p.samples.first { $0.typeIdentifier == "hp:hae:sleep_analysis_night" }!
        #expect(night.aggregated && night.sample.numericValue == 7.2 && night.sample.endDate - night.sample.startDate == 8 * 3600 + 5 * 60)
        let run = p.samples.first { $0.sample.metadata?["hp:hae_id"] == .string("SYN-1") }!
        #expect(run.sample.durationSeconds == 1800 && run.sample.numericValue == 300 && run.sample.metadata?["hp:distance"] == .number(5000))
        #expect(run.children.count == 2)
        if case .array(let locs)? = run.children.last?.sample.metadata?["hp:locations"] { #expect(locs.count == 2) } else { Issue.record("no route locations") }
        let yoga = p.samples.first { $0.sample.metadata?["hp:hae_id"] == .string("SYN-2") }!
        #expect(yoga.sample.source == nil)
    }

    @Test("dates: offsets, the ISO form, and impossible days", arguments: [
        ("2024-02-06 14:30:00 -0800", 1_707_258_600.0), ("2024-02-06 22:30:00 +0000", 1_707_258_600.0),
        ("2024-02-07 04:00:00 +0530", 1_707_258_600.0), ("2024-02-06T22:30:00Z", 1_707_258_600.0),
        ("2024-02-29 00:00:00 +0000", 1_709_164_800.0),
    ])
    func dates(text: String, expected: Double) {
        #expect(HAEDate.parse(text) == expected)
    }

    @Test("malformed dates are refused", arguments: [
        "2023-02-29 00:00:00 +0000", "2024-04-31 00:00:00 +0000", "2024-02-06 24:00:00 +0000", "2024-02-06 14:30:00",
        "06/02/2024 14:30", "2024-02-06 14:30:00 +2500", "2024-13-01 00:00:00 +0000", "", "2024-02-06 14:30:00 -0800 extra",
    ])
    func badDates(text: String) {
        #expect(HAEDate.parse(text) == nil)
    }

    @Test("malformed bodies give an error naming the JSON path, never a crash", arguments: [
        ("[1]", "$"),
        ("{\"data\":[]}", "data"),
        ("{\"data\":{\"metrics\":{}}}", "data.metrics"),
        ("{\"data\":{\"metrics\":[1]}}", "data.metrics[0]"),
        ("{\"data\":{\"metrics\":[{\"units\":\"count\",\"data\":[]}]}}", "data.metrics[0].name"),
        ("{\"data\":{\"metrics\":[{\"name\":\"step_count\",\"data\":[{\"qty\":\"NaN\",\"date\":\"2024-02-06 00:00:00 +0000\"}]}]}}", "data.metrics[0].data[0].qty"),
        ("{\"data\":{\"metrics\":[{\"name\":\"step_count\",\"data\":[{\"qty\":1e400,\"date\":\"2024-02-06 00:00:00 +0000\"}]}]}}", "$"),
        ("{\"data\":{\"metrics\":[{\"name\":\"step_count\",\"data\":[{\"qty\":1e300,\"date\":\"2024-02-06 00:00:00 +0000\"}]}]}}", "data.metrics[0].data[0].qty"),
        ("{\"data\":{\"metrics\":[{\"name\":\"step_count\",\"data\":[{\"qty\":1}]}]}}", "data.metrics[0].data[0].date"),
        ("{\"data\":{\"metrics\":[{\"name\":\"step_count\",\"data\":[{\"qty\":1,\"date\":17}]}]}}", "data.metrics[0].data[0].date"),
        ("{\"data\":{\"metrics\":[{\"name\":\"step_count\",\"data\":[{\"qty\":1,\"date\":\"1969-12-31 00:00:00 +0000\"}]}]}}", "data.metrics[0].data[0].date"),
        ("{\"data\":{\"metrics\":[{\"name\":\"heart_rate\",\"data\":[{\"Min\":90,\"Avg\":60,\"Max\":70,\"date\":\"2024-02-06 00:00:00 +0000\"}]}]}}", "data.metrics[0].data[0]"),
        ("{\"data\":{\"metrics\":[{\"name\":\"blood_pressure\",\"data\":[{\"systolic\":120,\"date\":\"2024-02-06 00:00:00 +0000\"}]}]}}", "data.metrics[0].data[0].diastolic"),
        ("{\"data\":{\"metrics\":[{\"name\":\"sleep_analysis\",\"data\":[{\"startDate\":\"2024-02-06 02:00:00 +0000\",\"endDate\":\"2024-02-06 01:00:00 +0000\",\"value\":\"Core\"}]}]}}", "data.metrics[0].data[0].endDate"),
        ("{\"data\":{\"metrics\":[{\"name\":\"sleep_analysis\",\"data\":[{\"startDate\":\"2024-02-06 00:00:00 +0000\",\"endDate\":\"2024-02-06 01:00:00 +0000\",\"value\":\"Dozing\"}]}]}}", "data.metrics[0].data[0].value"),
        ("{\"data\":{\"metrics\":[{\"name\":\"sleep_analysis\",\"data\":[{\"date\":\"2024-02-06 00:00:00 +0000\",\"totalSleep\":99}]}]}}", "data.metrics[0].data[0].totalSleep"),
        ("{\"data\":{\"workouts\":[{\"name\":\"Run\",\"start\":\"2024-02-06 00:00:00 +0000\",\"end\":\"2024-02-06 01:00:00 +0000\"}]}}", "data.workouts[0].duration"),
        ("{\"data\":{\"workouts\":[{\"name\":\"Run\",\"start\":\"2024-02-06 00:00:00 +0000\",\"end\":\"2024-02-06 01:00:00 +0000\",\"duration\":-1}]}}", "data.workouts[0].duration"),
        ("{\"data\":{\"workouts\":[{\"name\":\"Run\",\"start\":\"2024-02-06 00:00:00 +0000\",\"end\":\"2024-02-06 01:00:00 +0000\",\"duration\":1,\"route\":[{\"lat\":91,\"lon\":0,\"timestamp\":\"2024-02-06 00:00:00 +0000\"}]}]}}", "data.workouts[0].route[0].latitude"),
        ("{\"data\":{\"workouts\":[{\"name\":\"Run\",\"start\":\"2024-02-06 00:00:00 +0000\",\"end\":\"2024-02-06 01:00:00 +0000\",\"duration\":1,\"activeEnergyBurned\":{\"units\":\"kcal\"}}]}}", "data.workouts[0].activeEnergyBurned.qty"),
        ("{\"data\":{\"ecg\":\"x\"}}", "data.ecg"),
        ("{\"data\":{\"symptoms\":[7]}}", "data.symptoms[0]"),
        ("{\"data\":{}} trailing", "$"),
        ("", "$"),
    ])
    func malformed(body: String, path: String) {
        do {
            _ = try HAEDecoder().decode(Array(body.utf8))
            Issue.record("accepted: \(body)")
        } catch {
            #expect(error.path == path, "\(error.message)")
            #expect(!error.message.contains("NaN") && !error.message.contains("Dozing"), "no values in errors: \(error.message)")
        }
    }

    @Test("deep nesting, a 10 MB string and an oversized body are refused with an error")
    func hostile() {
        let deep = "{\"data\":{\"metrics\":" + String(repeating: "[", count: 10_000) + String(repeating: "]", count: 10_000) + "}}"
        #expect(throws: HAEDecodeError.self) { try HAEDecoder().decode(Array(deep.utf8)) }
        let big = String(repeating: "x", count: 10 << 20)
        let longSource = "{\"data\":{\"metrics\":[{\"name\":\"step_count\",\"data\":[{\"qty\":1,\"date\":\"2024-02-06 00:00:00 +0000\",\"source\":\"\(big)\"}]}]}}"
        do { _ = try HAEDecoder().decode(Array(longSource.utf8)); Issue.record("accepted a 10 MB source") } catch {
            #expect(error.path == "data.metrics[0].data[0].source" && error.message.count < 200)
        }
        var small = HAEDecoder()
        small.maxBodyBytes = 1000
        #expect(throws: HAEDecodeError("$", "body is larger than 1000 bytes; split the export (batch requests) or raise the limit")) {
            try small.decode(Array(longSource.utf8))
        }
    }

    @Test("random byte damage to a valid body never traps: it decodes or throws")
    func damaged() {
        let good = HAESynthetic.everyShape
        var rng = SystemRandomNumberGenerator()
        for _ in 0..<2_000 {
            var b = good
            for _ in 0..<Int.random(in: 1...4, using: &rng) {
                b[Int.random(in: 0..<b.count, using: &rng)] = UInt8.random(in: 0...255, using: &rng)
            }
            if Bool.random(using: &rng) { b.removeLast(Int.random(in: 0..<b.count, using: &rng)) }
            _ = try? HAEDecoder().decode(b)
        }
    }
}
