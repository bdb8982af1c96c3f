import Foundation
import Logging
import NIOConcurrencyHelpers
import Testing
@testable import HealthProbeServer
import HealthProbeArchive
import HealthProbeNode
import HealthProbeTestSupport

/// The config file's `alerts` object: thresholds and the verification schedule, read and
/// range-checked by key, and used by the alert service.
@Suite("Alert thresholds from the config file")
struct AlertThresholdsTests {
    func load(_ text: String) throws -> ServerConfig {
        let dir = TempDir()
        try text.write(toFile: dir.path + "/config.json", atomically: true, encoding: .utf8)
        return try ServerConfig.load(dataDirectory: dir.path)
    }

    @Test("every key read; absent keys keep today's defaults; each out-of-range or mistyped value names its key and the allowed range")
    func parse() throws {
        #expect(try load("{}").alerts == AlertThresholds())
        let d = AlertThresholds()
        #expect(d.diskFreeGiB == 1 && d.diskFreePercent == 5 && d.certificateWarningDays == 14 && d.deliveryFailingHours == 24
                && d.verifyQuickHours == 24 && d.verifyFullHours == 168 && d.evaluateSeconds == 60)
        let defaults = d.serverConditions(dataDirectory: "/x", certificateFile: nil)
        let today = ServerConditions(dataDirectory: "/x", certificateFile: nil)
        #expect(defaults.minimumFreeBytes == today.minimumFreeBytes && defaults.minimumFreeFraction == today.minimumFreeFraction
                && defaults.certificateWarning == today.certificateWarning && defaults.deliveryFailingAfter == today.deliveryFailingAfter)

        let c = try load(#"{"alerts": {"disk_free_gib": 2.5, "disk_free_percent": 10, "certificate_warning_days": 30, "delivery_failing_hours": 6, "verify_quick_hours": 12, "verify_full_hours": 72}}"#)
        #expect(c.alerts.diskFreeGiB == 2.5 && c.alerts.diskFreePercent == 10 && c.alerts.certificateWarningDays == 30
                && c.alerts.deliveryFailingHours == 6 && c.alerts.verifyQuickHours == 12 && c.alerts.verifyFullHours == 72)
        let s = c.alerts.serverConditions(dataDirectory: "/x", certificateFile: nil)
        #expect(s.minimumFreeBytes == 2_684_354_560 && s.minimumFreeFraction == 0.1 && s.certificateWarning == 30 * 86400 && s.deliveryFailingAfter == 6 * 3600)
        let v = c.alerts.scheduledVerify(store: ServerStore(root: "/x"))
        #expect(v.quickEvery == 12 * 3600 && v.fullEvery == 72 * 3600)
        #expect(try load(#"{"alerts": {"disk_free_gib": 0, "disk_free_percent": 0}}"#).alerts.diskFreeGiB == 0, "0 turns one test off")
        #expect(try load(#"{"alerts": {"evaluate_seconds": 5}}"#).alerts.evaluateSeconds == 5)

        for (text, needle) in [
            (#"{"alerts": {"disk_free_gib": 1025}}"#, #""alerts.disk_free_gib" must be a number from 0 to 1024"#),
            (#"{"alerts": {"disk_free_gib": -1}}"#, #""alerts.disk_free_gib" must be a number from 0 to 1024"#),
            (#"{"alerts": {"disk_free_percent": 51}}"#, #""alerts.disk_free_percent" must be a number from 0 to 50"#),
            (#"{"alerts": {"certificate_warning_days": 0}}"#, #""alerts.certificate_warning_days" must be a number from 1 to 365"#),
            (#"{"alerts": {"certificate_warning_days": "14"}}"#, #""alerts.certificate_warning_days" must be a number from 1 to 365"#),
            (#"{"alerts": {"delivery_failing_hours": 721}}"#, #""alerts.delivery_failing_hours" must be a number from 1 to 720"#),
            (#"{"alerts": {"verify_quick_hours": 0.5}}"#, #""alerts.verify_quick_hours" must be a number from 1 to 720"#),
            (#"{"alerts": {"verify_full_hours": 9000}}"#, #""alerts.verify_full_hours" must be a number from 1 to 8760"#),
            (#"{"alerts": {"verify_full_hours": true}}"#, #""alerts.verify_full_hours" must be a number from 1 to 8760"#),
            (#"{"alerts": {"verify_quick_hours": 48, "verify_full_hours": 24}}"#, #""alerts.verify_full_hours" (24) must be at least "alerts.verify_quick_hours" (48)"#),
            (#"{"alerts": {"evaluate_seconds": 4}}"#, #""alerts.evaluate_seconds" must be a number from 5 to 3600"#),
            (#"{"alerts": {"evaluate_seconds": 3601}}"#, #""alerts.evaluate_seconds" must be a number from 5 to 3600"#),
            (#"{"alerts": {"disk_free": 1}}"#, #"unknown key "alerts.disk_free""#),
            (#"{"alerts": [1]}"#, #""alerts" must be a JSON object"#),
        ] {
            #expect { try load(text) } throws: { "\($0)".contains(needle) }
        }
    }

    @Test("the thresholds are what fires: 5 GiB free (10%) fires with disk_free_gib 10 or disk_free_percent 20, not with the default; a certificate 20 days from its end fires with 30 warning days")
    func thresholdsFire() throws {
        let tls = TempDir()
        let t0 = Date().timeIntervalSince1970.rounded()
        // Made ten years less twenty days ago: it ends in twenty days.
        try ServerIdentity.generate(now: Date(timeIntervalSince1970: t0 - 10 * 365 * 86_400 + 20 * 86_400)).write(directory: tls.path)
        func fired(_ config: String) throws -> Set<AlertCondition> {
            var s = try load(config).alerts.serverConditions(dataDirectory: "/x", certificateFile: tls.path + "/server-cert.pem")
            s.space = { _ in (5 * 1_073_741_824, 50 * 1_073_741_824) }
            return Set(s.findings(now: t0, oldestFailingMessage: t0 - 7 * 3600).map(\.condition))
        }
        #expect(try fired("{}") == [])
        #expect(try fired(#"{"alerts": {"disk_free_gib": 10}}"#) == [.diskSpaceLow])
        #expect(try fired(#"{"alerts": {"disk_free_percent": 20}}"#) == [.diskSpaceLow], "10% free")
        #expect(try fired(#"{"alerts": {"certificate_warning_days": 30}}"#) == [.certificateExpiring])
        #expect(try fired(#"{"alerts": {"delivery_failing_hours": 6}}"#) == [.deliveryFailing])
    }

    @Test("the verification schedule from the config: quick every 12 h and full every 48 h on the injected clock")
    func schedule() async throws {
        let data = TempDir()
        let home = TempHome()
        try simulate(home, days: 1)
        try await withServer(data) { server in
            let e = try await server.enroll("phone")
            _ = try await SyncClient(node: try home.open(), outbox: home.root + "/outbox").sync(e)
            let t0 = Date().timeIntervalSince1970
            let time = NIOLockedValueBox(t0)
            var s = AlertService<ContinuousClock>.Settings()
            s.verify = try load(#"{"alerts": {"verify_quick_hours": 12, "verify_full_hours": 48}}"#).alerts.scheduledVerify(store: server.store)
            let alerts = AlertService(registry: try server.store.registry(), sender: .shared, settings: s, clock: ContinuousClock(),
                                      now: { time.withLockedValue { $0 } }, logger: Logger(label: "test.alerts"))
            func ran(at offset: Double) async throws -> [String] {
                time.withLockedValue { $0 = t0 + offset }
                return try await alerts.verifyDue().map(\.mode.rawValue)
            }
            #expect(try await ran(at: 0) == ["quick"])
            #expect(try await ran(at: 12 * 3600 - 1) == [])
            #expect(try await ran(at: 12 * 3600) == ["quick"])
            #expect(try await ran(at: 48 * 3600 - 1) == ["quick"])
            #expect(try await ran(at: 48 * 3600) == ["full"])
        }
    }
}
