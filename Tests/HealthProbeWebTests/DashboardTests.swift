import Foundation
import GRDB
import Testing
import HealthProbeArchive
import HealthProbeServer
import HealthProbeTestSupport
@testable import HealthProbeWeb

/// The dashboard as a person uses it, over real TLS against a real server with synced chains.
@Suite("Web dashboard", .serialized)
struct DashboardTests {
    /// Visible records at the latest observation, counted from the replica's ranges (not from aggregates).
    static func visible(_ store: ServerStore, _ chain: String) throws -> Int {
        try store.readReplica(chain) { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM sample_visibility_ranges WHERE last_observation_id IS NULL")! }
    }

    @Test("signing in: a redirect without a session, a refusal for a wrong password, a Secure HttpOnly SameSite=Strict cookie")
    func signIn() async throws {
        try await withHousehold { h in
            let b = h.browser()
            let anonymous = try await b.request("GET", "/")
            #expect(anonymous.status == 303 && anonymous.header("Location") == "/login")
            let api = try await b.request("GET", "/api/v1/overview")
            #expect(api.status == 401 && api.body.contains("\"error\":\"unauthenticated\""))
            let wrong = try await b.signIn("ann", "not-the-password-at-all")
            #expect(wrong.status == 401 && b.cookie == nil && wrong.body.contains("Wrong name or password"))
            let ok = try await b.signIn("ann", Household.password)
            #expect(ok.status == 303)
            let cookie = try #require(ok.header("Set-Cookie"))
            for attribute in ["__Host-hp_session=", "Secure", "HttpOnly", "SameSite=Strict", "Path=/"] { #expect(cookie.contains(attribute), "\(attribute)") }
            let token = try #require(b.csrf)
            #expect(token.count == 64)
            // Signing out ends the session.
            let out = try await b.request("POST", "/logout", body: "csrf=\(token)")
            #expect(out.status == 303)
            #expect(try await b.request("GET", "/").status == 303)
        }
    }

    @Test("the overview shows each person's chains with their visible records; an admin sees every chain")
    func overview() async throws {
        try await withHousehold { h in
            let b = h.browser()
            try await b.signIn("ann", Household.password)
            let page = try await b.request("GET", "/")
            #expect(page.status == 200)
            for (device, chain) in h.chains {
                #expect(page.body.contains("data-chain=\"\(chain)\""), "\(device)")
                let n = try Self.visible(h.store, chain)
                #expect(n > 0)
                #expect(page.body.contains(">\(n) in 2 type(s)<"), "\(device): \(n)")
            }
            #expect(page.body.contains("<h2>ann</h2>") && page.body.contains("<h2>bob</h2>"))
            // The API says the same.
            let api = try await b.request("GET", "/api/v1/overview")
            let json = try JSONSerialization.jsonObject(with: Data(api.body.utf8)) as! [String: Any]
            let people = json["people"] as! [[String: Any]]
            #expect(people.map { $0["person"] as! String } == ["ann", "bob"])
            let card = (people[0]["chains"] as! [[String: Any]])[0]
            #expect(card["visible_records"] as? Int == (try Self.visible(h.store, h.chains["ann-phone"]!)))
        }
    }

    @Test("the overview names classified loss at a chain's latest observation, with the types; consolidation is not called loss")
    func lossAlert() async throws {
        try await withHousehold { h in
            let day0 = 1_749_945_600.0
            let all = (0..<288).map { beat(day0, $0, value: 60 + Double($0 % 7)) }
            let chain = try await h.sync(device: "cat-phone", person: "cat") { home in
                let node = try home.open()
                try captureIn(node, samples: all)
                try captureIn(node, samples: Array(all.dropLast(20)))   // 20 gone, nothing in their place
            }
            let c = h.browser()
            try await c.signIn("cat", Household.password)
            let page = try await c.request("GET", "/")
            #expect(page.body.contains("class=\"alert loss\">classified loss at observation 2: 20 record(s) in 1 type(s) (Heart rate)"))
            let api = try await c.request("GET", "/api/v1/overview")
            #expect(api.body.contains("\"kind\":\"loss\""))
            // The observation page says the same, per type.
            let obs = try await c.request("GET", "/api/v1/chains/\(chain)/observations/2")
            #expect(obs.body.contains("\"lost_records\":20") && obs.body.contains("\"labels\":[\"loss\"]"))
            // Other chains (simulated, no deletion) carry no loss alert.
            let a = h.browser()
            try await a.signIn("ann", Household.password)
            #expect(try await a.request("GET", "/").body.components(separatedBy: "alert loss").count == 2)
        }
    }

    @Test("a member reads their own chains only, until one is shared; ids cannot be guessed; a viewer changes nothing")
    func authorization() async throws {
        try await withHousehold { h in
            let ann = h.chains["ann-phone"]!, bob = h.chains["bob-phone"]!
            let b = h.browser()
            try await b.signIn("bob", Household.password)
            let page = try await b.request("GET", "/")
            #expect(page.body.contains(bob) && !page.body.contains(ann))
            for path in ["/chains/\(ann)", "/chains/\(ann)/observations/1", "/chains/\(ann)/types/HKQuantityTypeIdentifierStepCount",
                         "/api/v1/chains/\(ann)", "/api/v1/chains/\(ann)/observations/1/visible", "/chains/\(String(repeating: "0", count: 64))",
                         "/chains/..%2F..%2Fserver.sqlite", "/chains/\(ann.uppercased())"] {
                let r = try await b.request("GET", path)
                #expect(r.status == 404, "\(path): \(r.status)")
                #expect(!r.body.contains("visible-records"))
            }
            #expect(try await b.request("GET", "/chains/\(bob)").status == 200)
            #expect(try await b.request("GET", "/admin").status == 403)
            // Bob may not share ann's chain, even with the right token.
            let steal = try await b.request("POST", "/chains/\(ann)/shares", body: "csrf=\(b.csrf!)&person=bob&action=share")
            #expect(steal.status == 404)
            #expect(try h.store.registry().shares(chain: ann).isEmpty)

            // The admin shares ann's chain with bob, then bob reads it.
            let a = h.browser()
            try await a.signIn("ann", Household.password)
            let share = try await a.request("POST", "/chains/\(ann)/shares", body: "csrf=\(a.csrf!)&person=bob&action=share")
            #expect(share.status == 303)
            #expect(try await b.request("GET", "/chains/\(ann)").status == 200)

            // A viewer sees only what is shared with them and can change nothing.
            let v = h.browser()
            try await v.signIn("vic", Household.password)
            #expect(!(try await v.request("GET", "/").body.contains("data-chain")))
            #expect(try await v.request("GET", "/chains/\(bob)").status == 404)
            _ = try await a.request("POST", "/chains/\(bob)/shares", body: "csrf=\(a.csrf!)&person=vic&action=share")
            #expect(try await v.request("GET", "/chains/\(bob)").status == 200)
            let reshare = try await v.request("POST", "/chains/\(bob)/shares", body: "csrf=\(v.csrf!)&person=cat&action=share")
            #expect(reshare.status == 403)
            #expect(try h.store.registry().shares(chain: bob).map(\.person) == ["vic"])
            #expect(try await v.request("POST", "/admin/people", body: "csrf=\(v.csrf!)&name=eve&role=admin&password=\(Household.password)").status == 403)
            #expect(try h.store.registry().person(named: "eve") == nil)
            // Taking it back.
            _ = try await a.request("POST", "/chains/\(bob)/shares", body: "csrf=\(a.csrf!)&person=vic&action=unshare")
            #expect(try await v.request("GET", "/chains/\(bob)").status == 404)
        }
    }

    @Test("CSRF: a change without the session's token, with a wrong one, or from another site is refused and stores nothing")
    func csrf() async throws {
        try await withHousehold { h in
            let a = h.browser()
            try await a.signIn("ann", Household.password)
            let form = "name=eve&role=member&password=\(Household.password)"
            #expect(try await a.request("POST", "/admin/people", body: form).status == 403)
            #expect(try await a.request("POST", "/admin/people", body: "csrf=\(String(repeating: "a", count: 64))&" + form).status == 403)
            #expect(try await a.request("POST", "/admin/people", body: "csrf=\(a.csrf!)&" + form, headers: [("Sec-Fetch-Site", "cross-site")]).status == 403)
            #expect(try await a.request("POST", "/admin/people", body: "csrf=\(a.csrf!)&" + form, headers: [("Origin", "https://evil.example")]).status == 403)
            #expect(try h.store.registry().person(named: "eve") == nil)
            // What a browser sends for its own form: the page's origin and same-origin.
            let ok = try await a.request("POST", "/admin/people", body: "csrf=\(a.csrf!)&" + form,
                                         headers: [("Origin", "https://127.0.0.1:\(h.webPort)"), ("Sec-Fetch-Site", "same-origin")])
            #expect(ok.status == 303 && ok.header("Location") == "/admin")
            #expect(try await a.request("GET", "/admin").body.contains("Added eve"))
            #expect(try h.store.registry().person(named: "eve")?.role == .member)
            // The API takes the token in a header.
            let api = try await a.request("POST", "/api/v1/admin/tokens", body: #"{"device":"eve-phone","person":"eve"}"#, contentType: "application/json")
            #expect(api.status == 403)
            let issued = try await a.request("POST", "/api/v1/admin/tokens", body: #"{"device":"eve-phone","person":"eve"}"#, contentType: "application/json",
                                             headers: [("X-CSRF-Token", a.csrf!)])
            #expect(issued.status == 201 && issued.body.contains("\"command\":\"hp-node enroll "))
            #expect(try h.store.registry().devices().first { $0.name == "eve-phone" }?.person == "eve")
        }
    }

    @Test("the admin page shows each replica's file size and free pages, and says when compacting is worth it")
    func replicaStorage() async throws {
        try await withHousehold { h in
            let a = h.browser()
            try await a.signIn("ann", Household.password)
            let chain = h.chains["ann-phone"]!
            let before = try await a.request("GET", "/admin").body
            #expect(before.contains("<th>Replica file</th>") && before.contains(" MB, "), "\(before)")
            #expect(!before.contains("worth compacting"))
            // Free pages, as a migration that rebuilds a table leaves them.
            let replica = try rawQueue(h.store.replicaPath(chain))
            try await replica.write { db in
                try db.execute(sql: "CREATE TABLE scratch(b BLOB)")
                for _ in 0..<200 { try db.execute(sql: "INSERT INTO scratch VALUES (randomblob(4000))") }
            }
            try await replica.write { db in try db.execute(sql: "DROP TABLE scratch") }
            let free = try await replica.read { try Int.fetchOne($0, sql: "PRAGMA freelist_count")! }
            try replica.close()
            let after = try await a.request("GET", "/admin").body
            #expect(after.contains("\(free) free pages <span class=\"compact-hint\">(worth compacting: stop the server and run <code>hp-server compact</code>)</span>"), "\(after)")
        }
    }

    @Test("an admin manages people from the page: roles, passwords, removal, with the registry's guards")
    func people() async throws {
        try await withHousehold { h in
            let a = h.browser()
            try await a.signIn("ann", Household.password)
            let csrf = try #require(a.csrf)
            func post(_ path: String, _ form: String) async throws -> HTTPReply { try await a.request("POST", path, body: "csrf=\(csrf)&" + form) }
            #expect(try await a.request("GET", "/admin").body.contains("action=\"/admin/people/cat/remove\""))
            // cat: a new password, then a viewer; each change redirects back to the page.
            #expect(try await post("/admin/people/cat/password", "password=another-long-password").status == 303)
            let c = h.browser()
            #expect(try await c.signIn("cat", "another-long-password").status == 303)
            #expect(try await post("/admin/people/cat/role", "role=viewer").status == 303)
            #expect(try h.store.registry().person(named: "cat")?.role == .viewer)
            // Guards: bob has a device (no viewer, no removal); ann is the last admin; unknown names; short passwords.
            #expect(try await post("/admin/people/bob/role", "role=viewer").status == 409)
            #expect(try await post("/admin/people/bob/remove", "confirm=yes").status == 409)
            #expect(try await post("/admin/people/ann/role", "role=member&confirm=yes").status == 409)
            #expect(try await post("/admin/people/nobody/remove", "").status == 404)
            #expect(try await post("/admin/people/nobody/remove", "confirm=yes").status == 404)
            #expect(try await post("/admin/people/cat/password", "password=short").status == 400)
            #expect(try h.store.registry().person(named: "bob")?.role == .member)
            // Removal: cat's session ends with the person.
            #expect(try await post("/admin/people/cat/remove", "confirm=yes").status == 303)
            #expect(try h.store.registry().person(named: "cat") == nil)
            #expect(try await c.request("GET", "/api/v1/me").status == 401)
            // Without the token, nothing changes.
            #expect(try await a.request("POST", "/admin/people/vic/remove", body: "confirm=yes").status == 403)
            #expect(try h.store.registry().person(named: "vic") != nil)
        }
    }

    @Test("repeated wrong passwords are slowed down")
    func throttled() async throws {
        try await withHousehold { h in
            let b = h.browser()
            _ = try await b.signIn("ann", "wrong-password-one")
            _ = try await b.signIn("ann", "wrong-password-two")
            let start = ContinuousClock.now
            let third = try await b.signIn("ann", "wrong-password-three")
            #expect(third.status == 401)
            #expect(ContinuousClock.now - start >= .milliseconds(1900))
        }
    }
}
