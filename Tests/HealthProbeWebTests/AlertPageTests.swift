import Foundation
import Logging
import Testing
import HealthProbeArchive
import HealthProbeServer
import HealthProbeTestSupport
@testable import HealthProbeWeb

/// `/alerts` over real TLS: the page lists what the person may read, acknowledges and
/// snoozes by form (CSRF checked), and manages only the person's own channels and quiet hours.
@Suite("Alerts page", .serialized)
struct AlertPageTests {
    @Test("alerts with device and person, Acknowledge and Snooze by form; channels added, tested, removed; quiet hours; the read rule and CSRF hold")
    func alertsPage() async throws {
        try await withHousehold { h in
            let bobChain = try #require(h.chains["bob-phone"])
            let registry = try h.store.registry()
            try registry.recordRefusal(chain: bobChain, code: "divergence", detail: "bundle diverges", now: Date().timeIntervalSince1970 + 5)
            _ = try AlertService(registry: registry, sender: .shared, clock: ContinuousClock(), now: { Date().timeIntervalSince1970 + 10 },
                                 logger: Logger(label: "test.alerts")).evaluate()
            let b = h.browser()
            try await b.signIn("bob", Household.password)
            let csrf = try #require(b.csrf)
            let page = try await b.request("GET", "/alerts")
            #expect(page.status == 200 && page.body.contains("<a href=\"/alerts\">Alerts</a>"))
            #expect(page.body.contains("<strong>bob-phone</strong></a> <span class=\"muted\">(bob)</span>") && page.body.contains("bundle refused"), "\(page.body)")
            #expect(page.body.contains("action=\"/alerts/\(bobChain)/refused/ack\"") && !page.body.contains("<script"))
            #expect(page.body.contains("No channels"))

            // Cat may not read bob's chain: not on her page, and her forms for it are not found.
            let c = h.browser()
            try await c.signIn("cat", Household.password)
            #expect(try await !c.request("GET", "/alerts").body.contains(bobChain))
            #expect(try await c.request("POST", "/alerts/\(bobChain)/refused/ack", body: "csrf=\(c.csrf ?? "")").status == 404)

            // Without the CSRF token nothing changes.
            #expect(try await b.request("POST", "/alerts/\(bobChain)/refused/ack", body: "csrf=wrong").status == 403)
            #expect(try registry.alertStates(for: nil).first?.acknowledgedBy == nil)
            #expect(try await b.request("POST", "/alerts/\(bobChain)/refused/snooze", body: "csrf=\(csrf)&hours=0").status == 400)
            let snoozed = try await b.request("POST", "/alerts/\(bobChain)/refused/snooze", body: "csrf=\(csrf)&hours=8")
            #expect(snoozed.status == 303 || snoozed.status == 302)
            #expect(try await b.request("GET", "/alerts").body.contains("Snoozed until"))
            #expect(try await b.request("POST", "/alerts/\(bobChain)/refused/ack", body: "csrf=\(csrf)").status / 100 == 3)
            let state = try #require(try registry.alertStates(for: nil).first { $0.chain == bobChain })
            #expect(state.acknowledgedBy == "bob" && state.snoozedUntil != nil)
            #expect(try await b.request("GET", "/alerts").body.contains("acknowledged by bob"))

            // Channels: added (the secret hidden), a test that fails says why, removed; another person's channel is not theirs.
            let secret = "bobs-page-secret-0123456789"
            #expect(try await b.request("POST", "/alerts/channels", body: "csrf=\(csrf)&kind=webhook&target=http%3A%2F%2F127.0.0.1%3A9%2Fhook&secret=\(secret)").status / 100 == 3)
            let withChannel = try await b.request("GET", "/alerts")
            #expect(withChannel.body.contains("http://127.0.0.1:9/hook") && !withChannel.body.contains(secret) && withChannel.body.contains("…6789"))
            #expect(try await b.request("POST", "/alerts/channels", body: "csrf=\(csrf)&kind=email&target=not-an-address&secret=").status == 400)
            #expect(try await b.request("POST", "/alerts/channels", body: "csrf=\(csrf)&kind=email&target=bob%40example.org&secret=").status / 100 == 3)
            let id = try #require(try registry.alertChannels(person: "bob").first?.id)
            #expect(try await b.request("POST", "/alerts/channels/\(id)/test", body: "csrf=\(csrf)").status / 100 == 3)
            #expect(try await b.request("GET", "/alerts").body.contains("The test message was not delivered"))
            #expect(try await c.request("POST", "/alerts/channels/\(id)/remove", body: "csrf=\(c.csrf ?? "")").status == 404)
            #expect(try await b.request("POST", "/alerts/channels/\(id)/remove", body: "csrf=\(csrf)").status / 100 == 3)
            #expect(try registry.alertChannels(person: "bob").map(\.kind) == [.email])

            // Quiet hours.
            #expect(try await b.request("POST", "/alerts/quiet", body: "csrf=\(csrf)&from=22%3A00&to=22%3A00").status == 400)
            #expect(try await b.request("POST", "/alerts/quiet", body: "csrf=\(csrf)&from=2x%3A00&to=07%3A00").status == 400)
            #expect(try await b.request("POST", "/alerts/quiet", body: "csrf=\(csrf)&from=22%3A30&to=07%3A00").status / 100 == 3)
            #expect(try registry.quietHours(person: "bob") == QuietHours(start: 22 * 60 + 30, end: 7 * 60))
            #expect(try await b.request("GET", "/alerts").body.contains("Messages wait from 22:30 to 07:00 (UTC)."))
            // Times on the page are in the person's zone once they have one (Kolkata: UTC+5:30).
            #expect(try await b.request("POST", "/alerts/quiet", body: "csrf=\(csrf)&from=22%3A30&to=07%3A00&zone=Asia%2FKolkata").status / 100 == 3)
            let firedAt = try #require(try registry.alertStates(for: nil).first { $0.chain == bobChain }?.firedAt)
            let zoned = try await b.request("GET", "/alerts").body
            #expect(zoned.contains("Times are in Asia/Kolkata") && zoned.contains("(\(LocalDays(identifier: "Asia/Kolkata", secondsFromGMT: nil).time(firedAt)) Asia/Kolkata)"), "\(zoned)")
            #expect(!zoned.contains("(UTC)"))
            #expect(try await b.request("POST", "/alerts/quiet", body: "csrf=\(csrf)&clear=yes").status / 100 == 3)
            #expect(try registry.quietHours(person: "bob") == nil)
            let actions = try registry.audit(limit: 10).map { "\($0.actor) \($0.via.rawValue) \($0.action.rawValue)" }
            #expect(actions.contains("bob web alert.ack") && actions.contains("bob web alert.snooze") && actions.contains("bob web alert.channel.add"))
        }
    }
}
