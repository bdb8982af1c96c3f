import Foundation
import Logging
import NIOConcurrencyHelpers
import Testing
@testable import HealthProbeServer
import HealthProbeNode
import HealthProbeTestSupport

/// The alert service verifies each chain on a schedule (quick daily, full weekly) on its
/// injected clock, recording each result as an admin's run is recorded.
@Suite("Scheduled verification")
struct ScheduledVerifyTests {
    @Test("quick at first sight and then daily, full weekly (a full one counts as the day's quick one); results recorded; nothing fires while they pass")
    func schedule() async throws {
        let data = TempDir()
        let home = TempHome()
        try simulate(home, days: 2)
        try await withServer(data) { server in
            let e = try await server.enroll("phone")
            _ = try await SyncClient(node: try home.open(), outbox: home.root + "/outbox").sync(e)
            let chain = try home.open().deviceChainHash
            let registry = try server.store.registry()
            let t0 = Date().timeIntervalSince1970
            let time = NIOLockedValueBox(t0)
            var s = AlertService<ContinuousClock>.Settings()
            s.verify = ScheduledVerify(store: server.store)
            let alerts = AlertService(registry: registry, sender: .shared, settings: s, clock: ContinuousClock(), now: { time.withLockedValue { $0 } },
                                      logger: Logger(label: "test.alerts"))
            func ran() async throws -> [String] { try await alerts.verifyDue().map { "\($0.chain == chain ? "phone" : $0.chain) \($0.mode.rawValue)" } }
            #expect(try await ran() == ["phone quick"])
            let quick = try #require(try registry.verification(chain: chain))
            #expect(quick.mode == "quick" && quick.ok && quick.bundles > 0)
            #expect(try await ran() == [])
            time.withLockedValue { $0 = t0 + 86_399 }
            #expect(try await ran() == [])
            time.withLockedValue { $0 = t0 + 86_400 }
            #expect(try await ran() == ["phone quick"])
            time.withLockedValue { $0 = t0 + 7 * 86_400 }
            #expect(try await ran() == ["phone full"])
            let full = try #require(try registry.verification(chain: chain))
            #expect(full.mode == "full" && full.ok, "\(full.problems)")
            time.withLockedValue { $0 = t0 + 8 * 86_400 - 1 }
            #expect(try await ran() == [], "the full one counted as that day's quick one")
            time.withLockedValue { $0 = t0 + 8 * 86_400 }
            #expect(try await ran() == ["phone quick"])
            #expect(try !alerts.evaluate().events.contains { $0.condition == .verificationFailed })
        }
    }
}
