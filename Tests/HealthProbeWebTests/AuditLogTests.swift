import Foundation
import Testing
import HealthProbeServer
import HealthProbeTestSupport
@testable import HealthProbeWeb

/// Every admin and sharing action from the page and the API lands in the audit log,
/// shown on the admin page and served to admins only.
@Suite("Audit log on the web", .serialized)
struct AuditLogTests {
    @Test("page and API actions are recorded with who, what, on whom and the door; admins read them on the page and in the API, others may not")
    func webActions() async throws {
        try await withHousehold { h in
            let a = h.browser()
            try await a.signIn("ann", Household.password)
            let csrf = try #require(a.csrf)
            #expect(try await a.request("POST", "/admin/people", body: "csrf=\(csrf)&name=dan&role=member&password=\(Household.password)").status == 303)
            #expect(try await a.request("POST", "/admin/people/dan/role", body: "csrf=\(csrf)&role=viewer").status == 303)
            #expect(try await a.request("POST", "/api/v1/admin/tokens", body: #"{"device":"cat-phone","person":"cat"}"#, contentType: "application/json",
                                        headers: [("X-CSRF-Token", csrf)]).status == 201)
            let b = h.browser()
            try await b.signIn("bob", Household.password)
            let bob = h.chains["bob-phone"]!
            #expect(try await b.request("POST", "/chains/\(bob)/shares", body: "csrf=\(b.csrf!)&person=cat&action=share").status == 303)
            #expect(try await b.request("DELETE", "/api/v1/chains/\(bob)/shares/cat", headers: [("X-CSRF-Token", b.csrf!)]).status == 200)
            // A share that is not there (any more) is not found; nothing is recorded for it.
            #expect(try await b.request("DELETE", "/api/v1/chains/\(bob)/shares/cat", headers: [("X-CSRF-Token", b.csrf!)]).status == 404)
            // A refused change records nothing.
            #expect(try await a.request("POST", "/admin/people/bob/role", body: "csrf=\(csrf)&role=viewer").status == 409)
            let entries = try h.store.registry().audit(limit: 10)
            let seen = entries.map { "\($0.actor) \($0.via.rawValue) \($0.action.rawValue) \($0.target ?? "")" }
            #expect(Array(seen.prefix(5)) == ["bob api chain.unshare \(bob)", "bob web chain.share \(bob)", "ann api device.token cat-phone",
                                             "ann web person.role dan", "ann web person.add dan"], "\(seen)")
            // The admin page lists them by name and the chain by its short id.
            let page = try await a.request("GET", "/admin").body
            #expect(page.contains("<table class=\"audit reflow\">") && page.contains("chain.unshare") && page.contains(String(bob.prefix(12))))
            let api = try await a.request("GET", "/api/v1/admin/audit?limit=2")
            #expect(api.status == 200 && api.body.contains("chain.unshare") && !api.body.contains("device.token"))
            #expect(try await a.request("GET", "/api/v1/admin/audit?limit=0").status == 400)
            #expect(try await b.request("GET", "/api/v1/admin/audit").status == 403)
            #expect(!page.contains(Household.password))
        }
    }
}
