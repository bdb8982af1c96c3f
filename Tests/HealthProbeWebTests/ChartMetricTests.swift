import Foundation
import Testing
import HealthProbeServer
import HealthProbeTestSupport
@testable import HealthProbeWeb

/// A type's chart shows the statistic that fits it: steps summed, a measurement by its
/// highest value, never a sum of weights or heart rates.
@Suite("Chart metrics by type", .serialized)
struct ChartMetricTests {
    @Test("steps default to the day's total, weight to its highest value; a sum is never offered or drawn for weight; names and units label the chart")
    func metrics() async throws {
        #expect(Chart.metrics(for: "HKQuantityTypeIdentifierHeartRate") == [.max, .records])
        #expect(Chart.metrics(for: "HKCategoryTypeIdentifierSleepAnalysis") == [.hours, .records])
        #expect(Chart.metrics(for: "HKWorkoutTypeIdentifier") == [.records])
        #expect(Chart.metric("sum", for: "HKQuantityTypeIdentifierHeartRate") == .max)
        #expect(Chart.metric("records", for: "HKQuantityTypeIdentifierHeartRate") == .records)
        try await withHousehold { h in
            let ann = h.chains["ann-phone"]!
            let a = h.browser()
            try await a.signIn("ann", Household.password)
            let steps = try await a.request("GET", "/chains/\(ann)/types/HKQuantityTypeIdentifierStepCount").body
            #expect(steps.contains("<h1>Steps") && steps.contains("Each bar: total a day (steps)") && steps.contains("?metric=records"))
            #expect(steps.contains("aria-label=\"Steps: total a day (steps)"))
            let weight = try await a.request("GET", "/chains/\(ann)/types/HKQuantityTypeIdentifierBodyMass").body
            #expect(weight.contains("<h1>Weight") && weight.contains("Each bar: highest a day (kg)"), "\(weight.prefix(2000))")
            #expect(!weight.contains("?metric=sum"))
            let asked = try await a.request("GET", "/types/HKQuantityTypeIdentifierBodyMass?metric=sum").body
            #expect(asked.contains("Each bar: highest a day (kg)") && !asked.contains("total a day"))
        }
    }
}
