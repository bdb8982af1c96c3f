import Foundation
import Logging
import Testing
import HealthProbeServer
import HealthProbeTestSupport
@testable import HealthProbeWeb

/// Server-level alerts (`server` in place of a chain) on `/alerts` and `/api/v1/alerts` over
/// real TLS: admins see, acknowledge and snooze them (CSRF checked); members and viewers
/// neither see them nor can act on them (not found, as another person's chain).
@Suite("Server-level alerts on the page and the API", .serialized)
struct ServerAlertPageTests {
    @Test("an admin acknowledges and snoozes disk_space_low by form and API; a member or viewer gets 404 and never sees it")
    func serverAlertsForAdminsOnly() async throws {
        try await withHousehold { h in
            let registry = try h.store.registry()
            var settings = AlertService<ContinuousClock>.Settings()
            var conditions = ServerConditions(dataDirectory: h.store.root, certificateFile: nil)
            conditions.space = { _ in (500_000_000, 100_000_000_000) }
            settings.server = conditions
            let round = try AlertService(registry: registry, sender: .shared, settings: settings, clock: ContinuousClock(),
                                         now: { Date().timeIntervalSince1970 + 10 }, logger: Logger(label: "test.alerts")).evaluate()
            #expect(round.events.contains { $0.chain == "server" && $0.condition == .diskSpaceLow && $0.event == .fired })

            let ann = h.browser()
            try await ann.signIn("ann", Household.password)
            let csrf = try #require(ann.csrf)
            let page = try await ann.request("GET", "/alerts")
            #expect(page.status == 200 && page.body.contains("<strong>this server</strong></a> <span class=\"muted\">(admins)</span>"), "\(page.body)")
            #expect(page.body.contains("action=\"/alerts/server/disk_space_low/ack\"") && page.body.contains("action=\"/alerts/server/disk_space_low/snooze\""))

            // Members and viewers: not on their page nor in their API, and every form or call is not found.
            for name in ["bob", "vic"] {
                let other = h.browser()
                try await other.signIn(name, Household.password)
                let theirs = try await other.request("GET", "/alerts")
                #expect(theirs.status == 200 && !theirs.body.contains("disk space low") && !theirs.body.contains("/alerts/server/"))
                let api = try await other.request("GET", "/api/v1/alerts")
                #expect(api.status == 200 && !api.body.contains("disk_space_low"), "\(api.body)")
                #expect(try await other.request("POST", "/alerts/server/disk_space_low/ack", body: "csrf=\(other.csrf ?? "")").status == 404)
                #expect(try await other.request("POST", "/alerts/server/disk_space_low/snooze", body: "csrf=\(other.csrf ?? "")&hours=8").status == 404)
                #expect(try await other.request("POST", "/api/v1/alerts/server/disk_space_low/ack", headers: [("X-CSRF-Token", other.csrf ?? "")]).status == 404)
                #expect(try await other.request("POST", "/api/v1/alerts/server/disk_space_low/snooze", body: #"{"hours":2}"#,
                                                contentType: "application/json", headers: [("X-CSRF-Token", other.csrf ?? "")]).status == 404)
            }
            var state = try #require(try registry.alertStates(for: nil).first { $0.chain == "server" })
            #expect(state.acknowledgedBy == nil && state.snoozedUntil == nil, "nothing changed by them")

            // The admin: CSRF checked; a condition that is not firing on the server is not found.
            #expect(try await ann.request("POST", "/alerts/server/disk_space_low/ack", body: "csrf=wrong").status == 403)
            #expect(try await ann.request("POST", "/alerts/server/silent/ack", body: "csrf=\(csrf)").status == 404)
            #expect(try await ann.request("POST", "/alerts/server/nonsense/ack", body: "csrf=\(csrf)").status == 404)
            #expect(try await ann.request("POST", "/alerts/server/disk_space_low/snooze", body: "csrf=\(csrf)&hours=721").status == 400)
            let snoozed = try await ann.request("POST", "/alerts/server/disk_space_low/snooze", body: "csrf=\(csrf)&hours=8")
            #expect(snoozed.status / 100 == 3)
            #expect(try await ann.request("GET", "/alerts").body.contains("Snoozed until"))
            state = try #require(try registry.alertStates(for: nil).first { $0.chain == "server" })
            #expect(state.snoozedUntil != nil && state.acknowledgedBy == nil)

            // The API: listed for the admin, acknowledged with the CSRF header only.
            let listed = try await ann.request("GET", "/api/v1/alerts")
            #expect(listed.status == 200 && listed.body.contains("\"chain\":\"server\"") && listed.body.contains("disk_space_low"), "\(listed.body)")
            #expect(try await ann.request("POST", "/api/v1/alerts/server/disk_space_low/ack").status == 403)
            #expect(try await ann.request("POST", "/api/v1/alerts/server/disk_space_low/ack", headers: [("X-CSRF-Token", csrf)]).status == 204)
            state = try #require(try registry.alertStates(for: nil).first { $0.chain == "server" })
            #expect(state.acknowledgedBy == "ann")
            #expect(try await ann.request("GET", "/alerts").body.contains("acknowledged by ann"))
            let actions = try registry.audit(limit: 5).map { "\($0.actor) \($0.via.rawValue) \($0.action.rawValue) \($0.target ?? "")" }
            #expect(Array(actions.prefix(2)) == ["ann api alert.ack server", "ann web alert.snooze server"], "\(actions)")
        }
    }
}
