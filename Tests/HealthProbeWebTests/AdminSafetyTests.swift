import Foundation
import GRDB
import Testing
import HealthProbeServer
import HealthProbeTestSupport
@testable import HealthProbeWeb

/// The admin page cannot surprise: selects show what is, hard changes ask first,
/// enrollment names its person, every change redirects (a reload repeats nothing).
@Suite("Admin page safety", .serialized)
struct AdminSafetyTests {
    /// The `<tr>` of one person on the admin page.
    static func row(_ page: String, _ person: String) throws -> String {
        let start = try #require(page.range(of: "<tr data-person=\"\(person)\">"))
        let end = try #require(page[start.upperBound...].range(of: "</tr>"))
        return String(page[start.lowerBound..<end.upperBound])
    }

    @Test("each person's role select starts on their role; pressing Set role untouched changes nothing")
    func roleSelects() async throws {
        try await withHousehold { h in
            let a = h.browser()
            try await a.signIn("ann", Household.password)
            let page = try await a.request("GET", "/admin").body
            for (person, role) in [("ann", "admin"), ("bob", "member"), ("cat", "member"), ("vic", "viewer")] {
                let row = try Self.row(page, person)
                #expect(row.contains("<option value=\"\(role)\" selected>"), "\(person)")
                #expect(row.components(separatedBy: " selected>").count == 2, "\(person): one option selected")
            }
            // The form as a browser submits it untouched: the person's own role.
            let same = try await a.request("POST", "/admin/people/vic/role", body: "csrf=\(a.csrf!)&role=viewer")
            #expect(same.status == 303)
            #expect(try h.store.registry().person(named: "vic")?.role == .viewer)
            #expect(try await a.request("GET", "/admin").body.contains("vic is already viewer; nothing changed."))
        }
    }

    @Test("giving or taking admin, removing a person and revoking a device ask first; only the confirmed form changes anything")
    func confirmations() async throws {
        try await withHousehold { h in
            let a = h.browser()
            try await a.signIn("ann", Household.password)
            let csrf = try #require(a.csrf)
            let registry = try h.store.registry()
            // To admin: a question, nothing changed; confirmed: changed.
            let ask = try await a.request("POST", "/admin/people/vic/role", body: "csrf=\(csrf)&role=admin")
            #expect(ask.status == 200)
            #expect(ask.body.contains("Make vic admin?") && ask.body.contains("name=\"confirm\" value=\"yes\"") && ask.body.contains("href=\"/admin\">Cancel"))
            #expect(try registry.person(named: "vic")?.role == .viewer)
            #expect(try await a.request("POST", "/admin/people/vic/role", body: "csrf=\(csrf)&role=admin&confirm=yes").status == 303)
            #expect(try registry.person(named: "vic")?.role == .admin)
            // From admin asks too; member to viewer does not.
            #expect(try await a.request("POST", "/admin/people/vic/role", body: "csrf=\(csrf)&role=viewer").status == 200)
            #expect(try registry.person(named: "vic")?.role == .admin)
            #expect(try await a.request("POST", "/admin/people/vic/role", body: "csrf=\(csrf)&role=viewer&confirm=yes").status == 303)
            #expect(try await a.request("POST", "/admin/people/cat/role", body: "csrf=\(csrf)&role=viewer").status == 303)
            #expect(try registry.person(named: "cat")?.role == .viewer)
            // Removal asks first.
            let remove = try await a.request("POST", "/admin/people/cat/remove", body: "csrf=\(csrf)")
            #expect(remove.status == 200 && remove.body.contains("Remove cat?"))
            #expect(try registry.person(named: "cat") != nil)
            #expect(try await a.request("POST", "/admin/people/cat/remove", body: "csrf=\(csrf)&confirm=yes").status == 303)
            #expect(try registry.person(named: "cat") == nil)
            // Revocation asks first.
            let revoke = try await a.request("POST", "/admin/devices/bob-phone/revoke", body: "csrf=\(csrf)")
            #expect(revoke.status == 200 && revoke.body.contains("Revoke bob-phone?"))
            #expect(try registry.devices().first { $0.name == "bob-phone" }?.revokedAt == nil)
            #expect(try await a.request("POST", "/admin/devices/bob-phone/revoke", body: "csrf=\(csrf)&confirm=yes").status == 303)
            #expect(try registry.devices().first { $0.name == "bob-phone" }?.revokedAt != nil)
            // The confirmation carries the CSRF token like any change.
            #expect(try await a.request("POST", "/admin/devices/ann-phone/revoke", body: "confirm=yes").status == 403)
            #expect(try registry.devices().first { $0.name == "ann-phone" }?.revokedAt == nil)
        }
    }

    @Test("a token is issued only for a chosen person; every change redirects and its notice shows once")
    func enrollmentAndRedirects() async throws {
        try await withHousehold { h in
            let a = h.browser()
            try await a.signIn("ann", Household.password)
            let csrf = try #require(a.csrf)
            let registry = try h.store.registry()
            let page = try await a.request("GET", "/admin").body
            #expect(page.contains("<select name=\"person\" required><option value=\"\" selected disabled>Choose a person</option>"))
            // Nothing chosen: refused, no device.
            #expect(try await a.request("POST", "/admin/tokens", body: "csrf=\(csrf)&device=cat-phone").status == 400)
            #expect(try await a.request("POST", "/admin/tokens", body: "csrf=\(csrf)&device=cat-phone&person=").status == 400)
            #expect(try !registry.devices().contains { $0.name == "cat-phone" })
            // Chosen: the token goes to that person's device, shown once after the redirect.
            let issued = try await a.request("POST", "/admin/tokens", body: "csrf=\(csrf)&device=cat-phone&person=cat")
            #expect(issued.status == 303 && issued.header("Location") == "/admin")
            #expect(try registry.devices().first { $0.name == "cat-phone" }?.person == "cat")
            let shown = try await a.request("GET", "/admin")
            #expect(shown.body.contains("hp-node enroll hpenroll1") && shown.body.contains("Token issued for cat-phone (cat&#39;s device)."))
            #expect(shown.header("Cache-Control") == "no-store")
            let again = try await a.request("GET", "/admin")
            #expect(!again.body.contains("hp-node enroll hpenroll1") && !again.body.contains("Token issued"))
            // A member cannot share their own chain with themself.
            let b = h.browser()
            try await b.signIn("bob", Household.password)
            let bob = h.chains["bob-phone"]!
            #expect(try await b.request("POST", "/chains/\(bob)/shares", body: "csrf=\(b.csrf!)&person=bob&action=share").status == 409)
            #expect(try registry.shares(chain: bob).isEmpty)
        }
    }
}
