import Foundation
import Logging
import Testing
import HealthProbeServer
import HealthProbeTestSupport
@testable import HealthProbeWeb

/// `/api/v1/alerts` over real TLS: each person sees and changes only alerts on chains they
/// may read, and manages only their own channels; secrets are never shown back.
@Suite("Alerts API", .serialized)
struct AlertAPITests {
    @Test("channels per person with the secret hidden; alerts listed, acknowledged and snoozed under the read rule")
    func alertsAPI() async throws {
        try await withHousehold { h in
            let bobChain = try #require(h.chains["bob-phone"])
            let registry = try h.store.registry()
            let b = h.browser()
            try await b.signIn("bob", Household.password)
            let csrf = try #require(b.csrf)
            let json = [("X-CSRF-Token", csrf)]
            let secret = "bobs-webhook-secret-0123456789"
            let added = try await b.request("POST", "/api/v1/alerts/channels", body: #"{"kind":"webhook","target":"http://127.0.0.1:9/hook","secret":"\#(secret)"}"#,
                                            contentType: "application/json", headers: json)
            #expect(added.status == 201)
            #expect(added.body.contains("secret_hint") && !added.body.contains(secret))
            #expect(try await b.request("POST", "/api/v1/alerts/channels", body: #"{"kind":"webhook","target":"ftp://x"}"#,
                                        contentType: "application/json", headers: json).status == 400)
            #expect(try await b.request("POST", "/api/v1/alerts/channels", body: #"{"kind":"ntfy","target":"https://ntfy.example/t"}"#,
                                        contentType: "application/json").status != 201, "no CSRF token, no change")
            let listed = try await b.request("GET", "/api/v1/alerts/channels")
            #expect(listed.status == 200 && listed.body.contains("127.0.0.1:9/hook") && !listed.body.contains(secret))

            // A refused bundle on bob's chain, evaluated by the alert service.
            try registry.recordRefusal(chain: bobChain, code: "divergent", detail: "bundle diverges", now: Date().timeIntervalSince1970 + 5)
            let alerts = AlertService(registry: registry, sender: .shared, clock: ContinuousClock(), now: { Date().timeIntervalSince1970 + 10 },
                                      logger: Logger(label: "test.alerts"))
            let round = try alerts.evaluate()
            #expect(round.events.contains { $0.chain == bobChain && $0.condition == .refused && $0.event == .fired })

            let seen = try await b.request("GET", "/api/v1/alerts")
            #expect(seen.status == 200 && seen.body.contains(bobChain) && seen.body.contains("refused"))
            let c = h.browser()
            try await c.signIn("cat", Household.password)
            let catSees = try await c.request("GET", "/api/v1/alerts")
            #expect(catSees.status == 200 && !catSees.body.contains(bobChain))
            #expect(try await c.request("POST", "/api/v1/alerts/\(bobChain)/refused/ack", headers: [("X-CSRF-Token", c.csrf ?? "")]).status == 404)
            #expect(try await b.request("POST", "/api/v1/alerts/\(bobChain)/refused/snooze", body: #"{"hours":0}"#,
                                        contentType: "application/json", headers: json).status == 400)
            #expect(try await b.request("POST", "/api/v1/alerts/\(bobChain)/refused/snooze", body: #"{"hours":2}"#,
                                        contentType: "application/json", headers: json).status == 204)
            // Acknowledging names the firing seen: an older one is a conflict, a malformed body a 400.
            struct Shown: Decodable { let chain: String; let condition: String; let fired_at: Double? }
            let shown = try JSONDecoder().decode([Shown].self, from: Data(seen.body.utf8))
            let firedAt = try #require(shown.first { $0.chain == bobChain && $0.condition == "refused" }?.fired_at)
            #expect(try await b.request("POST", "/api/v1/alerts/\(bobChain)/refused/ack", body: #"{"fired_at":\#(firedAt - 60)}"#,
                                        contentType: "application/json", headers: json).status == 409)
            #expect(try await b.request("POST", "/api/v1/alerts/\(bobChain)/refused/ack", body: #"{"fired_at":"yesterday"}"#,
                                        contentType: "application/json", headers: json).status == 400)
            #expect(try registry.alertStates(for: nil).first { $0.chain == bobChain && $0.condition == .refused }?.acknowledgedBy == nil)
            let okAck = try await b.request("POST", "/api/v1/alerts/\(bobChain)/refused/ack", body: #"{"fired_at":\#(firedAt)}"#, contentType: "application/json", headers: json)
            #expect(okAck.status == 204, "\(okAck.body): fired_at \(firedAt) from \(seen.body)")
            let state = try #require(try registry.alertStates(for: nil).first { $0.chain == bobChain && $0.condition == .refused })
            #expect(state.acknowledgedBy == "bob" && state.snoozedUntil != nil)
            let actions = try registry.audit(limit: 5).map { "\($0.actor) \($0.via.rawValue) \($0.action.rawValue)" }
            #expect(Array(actions.prefix(3)) == ["bob api alert.ack", "bob api alert.snooze", "bob api alert.channel.add"])
        }
    }
}
