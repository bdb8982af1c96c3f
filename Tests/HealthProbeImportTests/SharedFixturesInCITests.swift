import Foundation
import Testing
import HealthProbeTestSupport

/// In CI the public fixtures must be there: a wrong path would otherwise skip their tests silently.
@Suite("Public fixtures present in CI")
struct SharedFixturesInCITests {
    @Test("CI has ../shared/fixtures/apple-health beside the repository", .enabled(if: ProcessInfo.processInfo.environment["CI"] == "true", "only in CI"))
    func present() {
        #expect(SharedFixtures.available, "\(SharedFixtures.directory.path) is missing")
    }
}
