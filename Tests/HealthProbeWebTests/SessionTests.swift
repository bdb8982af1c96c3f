import Foundation
import GRDB
import Logging
import ServiceLifecycle
import Testing
import HealthProbeCanonical
import HealthProbeServer
import HealthProbeTestSupport
@testable import HealthProbeWeb

/// Sessions end when they should (a password, a role, a removal) and survive a restart,
/// stored server-side as hashes of their ids.
@Suite("Web sessions", .serialized)
struct SessionTests {
    @Test("a password reset, a role change and a removal end every session of that person at once; others keep theirs")
    func endings() async throws {
        try await withHousehold { h in
            let a = h.browser()
            try await a.signIn("ann", Household.password)
            let registry = try h.store.registry()
            let now = Date().timeIntervalSince1970
            // cat signs in from two browsers; bob from one.
            let c1 = h.browser(), c2 = h.browser(), b = h.browser()
            for (browser, name) in [(c1, "cat"), (c2, "cat"), (b, "bob")] { #expect(try await browser.signIn(name, Household.password).status == 303) }
            #expect(try registry.sessionCount(person: "cat", now: now) == 2)
            // A password reset by the admin: both of cat's sessions end; bob's and ann's stay.
            #expect(try await a.request("POST", "/admin/people/cat/password", body: "csrf=\(a.csrf!)&password=a-brand-new-password").status == 303)
            for browser in [c1, c2] { #expect(try await browser.request("GET", "/api/v1/me").status == 401) }
            #expect(try await b.request("GET", "/api/v1/me").status == 200)
            #expect(try await a.request("GET", "/api/v1/me").status == 200)
            #expect(try registry.sessionCount(person: "cat", now: now) == 0)
            // A role change (here through the CLI's registry call) ends them too.
            #expect(try await c1.signIn("cat", "a-brand-new-password").status == 303)
            try registry.setRole(person: "cat", role: .viewer)
            #expect(try await c1.request("GET", "/api/v1/me").status == 401)
            // So does a password set with the CLI, and a removal.
            #expect(try await b.request("GET", "/api/v1/me").status == 200)
            try registry.setPassword(person: "bob", password: "bobs-new-password", cost: 4)
            #expect(try await b.request("GET", "/api/v1/me").status == 401)
            #expect(try await c2.signIn("cat", "a-brand-new-password").status == 303)
            try registry.removePerson(name: "cat")
            #expect(try await c2.request("GET", "/api/v1/me").status == 401)
            // The old cookie of a page load is sent back to sign-in, not shown a page.
            let page = try await c2.request("GET", "/")
            #expect(page.status == 303 && page.header("Location")?.hasPrefix("/login") == true)
        }
    }

    @Test("a session survives a restart of the server, ends on sign-out, and only a hash of its id is stored")
    func restart() async throws {
        let data = TempDir()
        let store = ServerStore(root: data.path)
        try store.create()
        try store.registry().addPerson(name: "ann", role: .admin, password: "correct-horse-battery", now: 1, cost: 4)
        let browser = try await withWeb(store) { (port: Int, fingerprint: String) async throws -> Browser in
            let b = Browser(port: port, fingerprint: fingerprint)
            #expect(try await b.signIn("ann", "correct-horse-battery").status == 303)
            #expect(try await b.request("GET", "/api/v1/me").status == 200)
            return b
        }
        let cookie = try #require(browser.cookie)
        let id = try #require(cookie.split(separator: "=", maxSplits: 1).last.map(String.init))
        // Stored: the hash of the id, never the id.
        let rows = try await store.registry().database.read { db in try String.fetchAll(db, sql: "SELECT id_hash FROM web_sessions") }
        #expect(rows.count == 1)
        #expect(!rows[0].contains(id) && rows[0].count == 64)
        try await withWeb(store) { (port: Int, fingerprint: String) async throws -> Void in
            let b = Browser(port: port, fingerprint: fingerprint)
            b.cookie = cookie
            #expect(try await b.request("GET", "/api/v1/me").status == 200)
            let page = try await b.request("GET", "/")
            b.csrf = Browser.csrf(in: page.body)
            #expect(try await b.request("POST", "/logout", body: "csrf=\(b.csrf!)").status == 303)
            let old = Browser(port: port, fingerprint: fingerprint)
            old.cookie = cookie
            #expect(try await old.request("GET", "/api/v1/me").status == 401)
        }
        #expect(try await store.registry().database.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM web_sessions")! } == 0)
    }

    /// Runs a web server on `store` for `body`, then stops it.
    func withWeb<T: Sendable>(_ store: ServerStore, _ body: @escaping @Sendable (Int, String) async throws -> T) async throws -> T {
        var settings = WebServer.Settings()
        settings.passwordCost = 4
        let quiet = { var l = Logger(label: "test.web"); l.logLevel = .critical; return l }()
        let web = try WebServer(store: store, settings: settings, logger: quiet)
        let fingerprint = try store.identity().fingerprint
        return try await withThrowingTaskGroup(of: T?.self) { group in
            let (ports, continuation) = AsyncStream.makeStream(of: Int.self)
            let app = try web.application(host: "127.0.0.1", port: 0) { continuation.yield($0) }
            group.addTask {
                try await ServiceGroup(configuration: .init(services: [app], logger: quiet)).run()
                return nil
            }
            var it = ports.makeAsyncIterator()
            guard let port = await it.next() else { throw WebTestError("the web server did not start") }
            let result = try await body(port, fingerprint)
            group.cancelAll()
            return result
        }
    }
}
