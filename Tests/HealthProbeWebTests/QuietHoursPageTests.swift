import Foundation
import Testing
import HealthProbeServer
import HealthProbeTestSupport
@testable import HealthProbeWeb

/// Quiet hours in a time zone on `/alerts` over real TLS: the zone is offered, checked (the
/// error names the field), stored and shown.
@Suite("Quiet hours on the alerts page", .serialized)
struct QuietHoursPageTests {
    @Test("a zone from the list is stored and shown; an unknown zone is refused naming the field; without one it is UTC")
    func zoneOnThePage() async throws {
        try await withHousehold { h in
            let registry = try h.store.registry()
            let b = h.browser()
            try await b.signIn("bob", Household.password)
            let csrf = try #require(b.csrf)
            let page = try await b.request("GET", "/alerts")
            #expect(page.body.contains("name=\"zone\" value=\"UTC\" list=\"zones\"") && page.body.contains("<option value=\"Europe/Berlin\">")
                    && page.body.contains("<option value=\"America/New_York\">"))

            let bad = try await b.request("POST", "/alerts/quiet", body: "csrf=\(csrf)&from=22%3A30&to=07%3A00&zone=Mars%2FOlympus_Mons")
            #expect(bad.status == 400 && bad.body.contains("time zone:") && bad.body.contains("Mars/Olympus_Mons"), "\(bad.body)")
            #expect(try registry.quietHours(person: "bob") == nil)
            #expect(try await b.request("POST", "/alerts/quiet", body: "csrf=\(csrf)&from=22%3A30&to=22%3A30&zone=Europe%2FBerlin").body.contains("from and to"))

            #expect(try await b.request("POST", "/alerts/quiet", body: "csrf=\(csrf)&from=22%3A30&to=07%3A00&zone=Europe%2FBerlin").status / 100 == 3)
            #expect(try registry.quietHours(person: "bob") == QuietHours(start: 22 * 60 + 30, end: 7 * 60, zone: "Europe/Berlin"))
            let shown = try await b.request("GET", "/alerts")
            #expect(shown.body.contains("Messages wait from 22:30 to 07:00 (Europe/Berlin).") && shown.body.contains("name=\"zone\" value=\"Europe/Berlin\""))
            #expect(try await b.request("POST", "/alerts/quiet", body: "csrf=wrong&from=01%3A00&to=02%3A00&zone=UTC").status == 403)
            #expect(try registry.quietHours(person: "bob")?.zone == "Europe/Berlin")

            #expect(try await b.request("POST", "/alerts/quiet", body: "csrf=\(csrf)&from=01%3A00&to=02%3A00").status / 100 == 3)
            #expect(try registry.quietHours(person: "bob") == QuietHours(start: 60, end: 120, zone: "UTC"))
        }
    }
}
