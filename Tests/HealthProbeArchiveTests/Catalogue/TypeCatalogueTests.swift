import Testing
@testable import HealthProbeArchive
import HealthProbeSimulator

/// The type catalogue: friendly names for every type the simulator writes, fallbacks for the rest.
@Suite("Type catalogue")
struct TypeCatalogueTests {
    @Test("every simulated type has a friendly name; the table names each type once")
    func simulatedTypesKnown() {
        for t in SimulatedType.all {
            let info = TypeCatalogue.info(t.identifier)
            #expect(info.known && info.name != t.identifier && !info.name.hasPrefix("HK"), "\(t.identifier)")
        }
        let ids = TypeCatalogue.table.map(\.0)
        #expect(Set(ids).count == ids.count)
    }

    @Test("statistics fit the type: steps summed, heart rate a range, weight the last value, sleep durations, workouts counted")
    func statistics() {
        #expect(TypeCatalogue.info("HKQuantityTypeIdentifierStepCount").statistic == .sum)
        #expect(TypeCatalogue.info("HKQuantityTypeIdentifierHeartRate").statistic == .range)
        #expect(TypeCatalogue.info("HKQuantityTypeIdentifierBodyMass").statistic == .latest)
        #expect(TypeCatalogue.info("HKCategoryTypeIdentifierSleepAnalysis").statistic == .duration)
        #expect(TypeCatalogue.info("HKWorkoutTypeIdentifier").statistic == .count)
        #expect(TypeCatalogue.name("HKQuantityTypeIdentifierStepCount") == "Steps")
    }

    @Test("an unknown type falls back to its identifier, with a statistic by its kind", arguments: [
        ("HKQuantityTypeIdentifierSomethingNew", TypeInfo.Statistic.range), ("HKCategoryTypeIdentifierSomethingNew", .duration), ("not-a-type", .range),
    ])
    func unknown(_ id: String, _ statistic: TypeInfo.Statistic) {
        let info = TypeCatalogue.info(id)
        #expect(!info.known && info.name == id && info.unit == nil && info.statistic == statistic)
    }
}
