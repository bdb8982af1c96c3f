import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import Testing
import HealthProbeServer
import HealthProbeTestSupport
@testable import HealthProbeWeb

/// The dashboard's routes answered by its router in process, with no socket
/// (HummingbirdTesting's `.router` framework): signing in, the security headers on every
/// answer, the session cookie, the one rule for who may open what, and the refusal of a
/// change without its form token or from another site. TLS, request deadlines and a real
/// browser stay with the other web suites.
@Suite("Web routes in process")
struct RouterInProcessTests {
    /// A registry with an admin (ann), a member (bob) and a viewer (vic), and the router over it.
    static func application() throws -> (some ApplicationProtocol, TempDir) {
        let data = TempDir()
        let store = ServerStore(root: data.path)
        try store.create()
        let registry = try store.registry()
        for (name, role) in [("ann", People.Role.admin), ("bob", .member), ("vic", .viewer)] {
            try registry.addPerson(name: name, role: role, password: Household.password, now: 1_750_000_000, cost: 4)
        }
        var settings = WebServer.Settings()
        settings.passwordCost = 4
        let quiet = { var l = Logger(label: "test.web.router"); l.logLevel = .critical; return l }()
        let web = try WebServer(store: store, settings: settings, logger: quiet)
        return (Application(router: try web.router(), logger: quiet), data)
    }

    static let form: HTTPFields = [.contentType: "application/x-www-form-urlencoded"]

    /// Signs `name` in; the session cookie to send back.
    static func signIn(_ client: some TestClientProtocol, _ name: String) async throws -> String {
        let r = try await client.execute(uri: "/login", method: .post, headers: form, body: ByteBuffer(string: "name=\(name)&password=\(Household.password)"))
        #expect(r.status == .seeOther, "\(name) signs in")
        let cookie = try #require(r.headers[values: .setCookie].first { $0.hasPrefix("__Host-hp_session=") })
        return String(cookie.split(separator: ";")[0])
    }

    static func expectSecurityHeaders(_ r: TestResponse, _ what: String) {
        #expect(r.headers[.contentSecurityPolicy] == SecurityHeaders<WebContext>.csp, "\(what)")
        #expect(r.headers[.xContentTypeOptions] == "nosniff", "\(what)")
        #expect(r.headers[HTTPField.Name("X-Frame-Options")!] == "DENY", "\(what)")
        #expect(r.headers[.strictTransportSecurity] != nil, "\(what)")
    }

    @Test("signed out: a page sends to sign-in, the API answers 401, a missing page is 404; every answer carries the security headers")
    func signedOut() async throws {
        let (app, data) = try Self.application()
        try await app.test(.router) { client in
            let page = try await client.execute(uri: "/", method: .get)
            #expect(page.status == .seeOther && page.headers[.location] == "/login")
            Self.expectSecurityHeaders(page, "/")
            let asked = try await client.execute(uri: "/admin", method: .get)
            #expect(asked.headers[.location] == "/login?next=" + LoginNext.encode("/admin"))
            let login = try await client.execute(uri: "/login", method: .get)
            #expect(login.status == .ok && String(buffer: login.body).contains("name=\"password\""))
            #expect(!String(buffer: login.body).contains("<script"), "the pages have no scripts")
            Self.expectSecurityHeaders(login, "/login")
            let api = try await client.execute(uri: "/api/v1/me", method: .get)
            #expect(api.status == .unauthorized)
            Self.expectSecurityHeaders(api, "/api/v1/me")
            let wrong = try await client.execute(uri: "/login", method: .post, headers: Self.form, body: ByteBuffer(string: "name=bob&password=not-it"))
            #expect(wrong.status != .seeOther && wrong.headers[values: .setCookie].allSatisfy { !$0.hasPrefix("__Host-hp_session=") || $0.contains("Max-Age=0") })
        }
        _ = data
    }

    @Test("a session cookie is host-only, secure, HTTP-only and same-site strict; a change without its form token, or from another site, is refused")
    func sessionAndWrites() async throws {
        let (app, data) = try Self.application()
        try await app.test(.router) { client in
            let r = try await client.execute(uri: "/login", method: .post, headers: Self.form, body: ByteBuffer(string: "name=bob&password=\(Household.password)"))
            let cookie = try #require(r.headers[values: .setCookie].first { $0.hasPrefix("__Host-hp_session=") })
            for attribute in ["Secure", "HttpOnly", "SameSite=Strict", "Path=/"] { #expect(cookie.contains(attribute), "\(attribute) in \(cookie)") }
            #expect(!cookie.contains("Domain="), "a __Host- cookie names no domain")
            let session: HTTPFields = [.cookie: String(cookie.split(separator: ";")[0])]
            let me = try await client.execute(uri: "/api/v1/me", method: .get, headers: session)
            #expect(me.status == .ok && String(buffer: me.body).contains("\"bob\""), "\(String(buffer: me.body))")
            let home = try await client.execute(uri: "/", method: .get, headers: session)
            let token = try #require(Browser.csrf(in: String(buffer: home.body)))

            var post = session
            post[.contentType] = "application/x-www-form-urlencoded"
            let noToken = try await client.execute(uri: "/logout", method: .post, headers: post, body: ByteBuffer(string: ""))
            #expect(noToken.status == .forbidden)
            var foreign = post
            foreign[HTTPField.Name("Sec-Fetch-Site")!] = "cross-site"
            #expect(try await client.execute(uri: "/logout", method: .post, headers: foreign, body: ByteBuffer(string: "csrf=\(token)")).status == .forbidden)
            foreign = post
            foreign[.origin] = "https://elsewhere.example"
            #expect(try await client.execute(uri: "/logout", method: .post, headers: foreign, body: ByteBuffer(string: "csrf=\(token)")).status == .forbidden)
            #expect(try await client.execute(uri: "/api/v1/me", method: .get, headers: session).status == .ok, "the refused changes left the session")
            #expect(try await client.execute(uri: "/logout", method: .post, headers: post, body: ByteBuffer(string: "csrf=\(token)")).status == .seeOther)
            #expect(try await client.execute(uri: "/api/v1/me", method: .get, headers: session).status == .unauthorized)
        }
        _ = data
    }

    @Test("the administration is the admin's alone, on the page and in the API; both say what to do about a device whose token expired")
    func adminOnly() async throws {
        let (app, data) = try Self.application()
        try await app.test(.router) { client in
            for (name, allowed) in [("ann", true), ("bob", false), ("vic", false)] {
                let session: HTTPFields = [.cookie: try await Self.signIn(client, name)]
                let page = try await client.execute(uri: "/admin", method: .get, headers: session)
                #expect((page.status == .ok) == allowed && (page.status == .forbidden) == !allowed, "\(name): /admin \(page.status)")
                let api = try await client.execute(uri: "/api/v1/admin/people", method: .get, headers: session)
                #expect((api.status == .ok) == allowed && (api.status == .forbidden) == !allowed, "\(name): /api/v1/admin/people \(api.status)")
                if allowed { #expect(String(buffer: api.body).contains("\"vic\"")) }
            }
            // A token left unused past its day: the page and the API say so, and what to do.
            _ = try ServerStore(root: data.path).registry().issueToken(name: "old-tablet", person: nil, now: 1_000)
            let ann: HTTPFields = [.cookie: try await Self.signIn(client, "ann")]
            let page = String(buffer: try await client.execute(uri: "/admin", method: .get, headers: ann).body)
            #expect(page.contains("token expired") && page.contains("its token expired unused; issue a new one with <code>hp-server enroll --name old-tablet</code>"), "\(page)")
            let api = String(buffer: try await client.execute(uri: "/api/v1/admin/devices", method: .get, headers: ann).body)
            #expect(api.contains("\"state\":\"token_expired\"") && api.contains("\"advice\":\"its token expired unused"), "\(api)")
        }
        _ = data
    }
}
