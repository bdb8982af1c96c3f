import HealthProbeArchive
import HealthProbeCanonical
import HealthProbeTestSupport
import Testing
@testable import HealthProbeImport

/// One push = one observation; closed windows re-read disappear what is absent
/// in them, additive windows never do. Real archives in temporary homes.
@Suite("Health Auto Export capture")
struct HAECaptureTests {
    /// `yyyy-MM-dd HH:mm:ss +0000` of Unix seconds.
    static func text(_ t: Double) -> String {
        let iso = CanonicalDate.string(t)
        return String(iso.prefix(10)) + " " + String(iso.dropFirst(11).prefix(8)) + " +0000"
    }

    static func body(_ name: String, _ units: String, at times: [Double], qty: Double = 100) -> HAEPayload {
        let points = times.map { "{\"qty\":\(qty),\"date\":\"\(text($0))\",\"source\":\"Synthetic Watch\"}" }
        // Synthetic: built from the documented shape; decoding it cannot fail.
        return try! HAEDecoder(aggregation: "none").decode(HAESynthetic.body(metrics: [HAESynthetic.metric(name, units, points)]))
    }

    static let steps = "HKQuantityTypeIdentifierStepCount"

    @Test("the same closed window posted 50 times: one observation of change, 49 that record nothing new")
    func fiftyPosts() throws {
        let t = TempHome()
        let node = try t.open()
        let midnight = (t.clock.now() / 86_400).rounded(.down) * 86_400
        let payload = Self.body("step_count", "count", at: (0..<24).map { midnight - 86_400 + Double($0) * 3600 })
        var results: [HAECapture.Result] = []
        for _ in 0..<50 {
            let w = HAEWindow(period: .yesterday, aggregation: HAEAggregation.none, now: t.clock.now(), utcOffsetSeconds: 0)
            results.append(try HAECapture(node: node).record(payload, window: w))
            t.clock.advance(60)
        }
        #expect(results[0].appeared == 24 && results[0].status == "completed")
        #expect(Set(results.map(\.observationId)).count == 50)
        for r in results.dropFirst() {
            #expect(r.appeared == 0 && r.changed == 0 && r.disappeared == 0 && r.unchanged == 24, "\(r)")
        }
    }

    @Test("a closed window re-read with one sample missing: that sample disappeared; one before the window is kept")
    func closedWindowMissing() throws {
        let t = TempHome()
        let node = try t.open()
        let midnight = (t.clock.now() / 86_400).rounded(.down) * 86_400
        let older = midnight - 3 * 86_400
        let inWindow = (0..<5).map { midnight - 86_400 + Double($0) * 3600 }
        let first = try HAECapture(node: node).record(Self.body("step_count", "count", at: [older] + inWindow),
                                                      window: HAEWindow(period: .sinceLastSync, aggregation: HAEAggregation.none, now: t.clock.now(), utcOffsetSeconds: 0))
        #expect(first.appeared == 6)
        t.clock.advance(3600)
        let again = try HAECapture(node: node).record(Self.body("step_count", "count", at: Array(inWindow.dropLast())),
                                                      window: HAEWindow(period: .yesterday, aggregation: HAEAggregation.none, now: t.clock.now(), utcOffsetSeconds: 0))
        #expect(again.disappeared == 1 && again.unchanged == 4, "\(again)")
    }

    @Test("a since_last_sync push without earlier samples disappears nothing")
    func additiveGap() throws {
        let t = TempHome()
        let node = try t.open()
        let midnight = (t.clock.now() / 86_400).rounded(.down) * 86_400
        let times = (0..<5).map { midnight - 86_400 + Double($0) * 3600 }
        let w = { HAEWindow(period: .sinceLastSync, aggregation: HAEAggregation.none, now: t.clock.now(), utcOffsetSeconds: 0) }
        _ = try HAECapture(node: node).record(Self.body("step_count", "count", at: times), window: w())
        t.clock.advance(3600)
        let gap = try HAECapture(node: node).record(Self.body("step_count", "count", at: [times[0]]), window: w())
        #expect(gap.disappeared == 0 && gap.unchanged == 1)
        let inferred = try HAECapture(node: node).record(Self.body("step_count", "count", at: [times[1]]),
                                                         window: HAEWindow(period: nil, aggregation: nil, now: t.clock.now(), utcOffsetSeconds: 0))
        #expect(inferred.disappeared == 0)
    }

    @Test("a resting heart rate written 11 hours after its time arrives late: lateness recorded, nothing lost")
    func lateRestingHeartRate() throws {
        let t = TempHome()
        let node = try t.open()
        let sampleTime = t.clock.now() - 11 * 3600
        let r = try HAECapture(node: node).record(Self.body("resting_heart_rate", "count/min", at: [sampleTime], qty: 52),
                                                  window: HAEWindow(period: .today, aggregation: HAEAggregation.none, now: t.clock.now(), utcOffsetSeconds: 0))
        #expect(r.appeared == 1 && r.disappeared == 0)
        let late = r.latenessByType["HKQuantityTypeIdentifierRestingHeartRate"] ?? -1
        #expect(abs(late - 11 * 3600) < 1, "\(late)")
    }

    @Test("aggregated points are their own identity class: a minutes push never disappears raw samples")
    func aggregatedApart() throws {
        let t = TempHome()
        let node = try t.open()
        let midnight = (t.clock.now() / 86_400).rounded(.down) * 86_400
        let raw = try HAECapture(node: node).record(Self.body("step_count", "count", at: [midnight - 80_000]),
                                                    window: HAEWindow(period: .yesterday, aggregation: HAEAggregation.none, now: t.clock.now(), utcOffsetSeconds: 0))
        #expect(raw.appeared == 1)
        t.clock.advance(60)
        let agg = try HAECapture(node: node).record(Self.body("step_count", "count", at: [midnight - 70_000]),
                                                    window: HAEWindow(period: .yesterday, aggregation: .minutes, now: t.clock.now(), utcOffsetSeconds: 0))
        #expect(agg.appeared == 1 && agg.disappeared == 0)
        #expect(HAEWindow(period: nil, aggregation: .minutes, now: 0, utcOffsetSeconds: 0).archiveType(
            HAESample(typeIdentifier: Self.steps, sample: CapturedSample(startDate: 0, endDate: 0, valueKind: .quantity), path: "", aggregated: true)) == "hp:hae:minutes:" + Self.steps)
    }

    @Test("windows: yesterday and previous_7_days are closed local days; since_last_sync, today and no period only add")
    func windows() {
        let now = 1_750_000_000.0 // 2025-06-15 15:06:40Z
        let midnight: Double = 1_749_945_600, day: Double = 86_400, eight: Double = 8 * 3600
        let y = HAEWindow(period: .yesterday, aggregation: nil, now: now, utcOffsetSeconds: 0).closed
        #expect(y?.lowerBound == midnight - day && y?.upperBound == midnight)
        let west = HAEWindow(period: .yesterday, aggregation: nil, now: now, utcOffsetSeconds: -8 * 3600).closed
        #expect(west?.lowerBound == midnight - day + eight && west?.upperBound == midnight + eight, "\(String(describing: west))")
        let week = HAEWindow(period: .previous7Days, aggregation: nil, now: now, utcOffsetSeconds: 0).closed
        #expect(week?.lowerBound == midnight - 7 * day && week?.upperBound == midnight, "\(String(describing: week))")
        for p in [HAEPeriod.sinceLastSync, .today] { #expect(HAEWindow(period: p, aggregation: nil, now: now, utcOffsetSeconds: 0).closed == nil) }
        #expect(HAEWindow(period: nil, aggregation: nil, now: now, utcOffsetSeconds: 0).closed == nil)
    }
}
