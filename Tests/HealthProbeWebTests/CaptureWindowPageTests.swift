import Foundation
import Testing
import HealthProbeArchive
import HealthProbeImport
import HealthProbeServer
import HealthProbeTestSupport
@testable import HealthProbeWeb

/// A Health Auto Export push, synced to the server: its observation page says which window
/// it re-read and which types arrived late (late, not lost); aggregated points have a type
/// page of their own, named as aggregated.
@Suite("Capture windows on the page", .serialized)
struct CaptureWindowPageTests {
    @Test("the window in words, late types, and the aggregated kind's own chart")
    func window() async throws {
        try await withHousehold { h in
            let chain = try await h.sync(device: "cat-hae", person: "cat") { home in
                let node = try home.open()
                let now = home.clock.now()
                let raw = try HAEDecoder(aggregation: "none").decode(HAESynthetic.points("resting_heart_rate", "count/min", at: [now - 11 * 3600], qty: 52))
                _ = try HAECapture(node: node).record(raw, window: HAEWindow(period: .yesterday, aggregation: HAEAggregation.none, now: now, utcOffsetSeconds: 0))
                let minutes = try HAEDecoder(aggregation: "minutes").decode(HAESynthetic.points("step_count", "count", at: [now - 600, now - 540]))
                _ = try HAECapture(node: node).record(minutes, window: HAEWindow(period: .sinceLastSync, aggregation: .minutes, now: now, utcOffsetSeconds: 0))
            }
            let c = h.browser()
            try await c.signIn("cat", Household.password)
            let page = try await c.request("GET", "/chains/\(chain)/observations/1").body
            #expect(page.contains("Health Auto Export push (yesterday, raw samples): re-read "), "\(page.prefix(3000))")
            #expect(page.contains("UTC completely, so a record missing from that window has disappeared"))
            #expect(page.contains("Arrived late (late, not lost): Resting heart rate up to 11 h after their own time."))
            let second = try await c.request("GET", "/chains/\(chain)/observations/2").body
            #expect(second.contains("(since the last sync, aggregated by minutes): only adds: nothing it lacks counts as disappeared"))
            let api = try await c.request("GET", "/api/v1/chains/\(chain)/observations/1")
            let json = try #require(try JSONSerialization.jsonObject(with: Data(api.body.utf8)) as? [String: Any])
            #expect((json["capture_window"] as? String)?.hasPrefix("Health Auto Export push") == true)
            #expect(((json["late_types"] as? [[String: Any]])?.first?["late_seconds"] as? Double ?? 0) >= 11 * 3600 - 1)
            let aggregated = try await c.request("GET", "/chains/\(chain)/types/hp:hae:minutes:HKQuantityTypeIdentifierStepCount?range=all")
            #expect(aggregated.status == 200)
            #expect(aggregated.body.contains("<h1>Steps (Health Auto Export, per minute)"))
        }
    }
}
