import Foundation
import Testing
import HealthProbeServer
import HealthProbeTestSupport
@testable import HealthProbeWeb

/// Signing in from a link lands on the linked page (never on another site), and an error
/// page keeps the navigation of the person signed in.
@Suite("Navigation: sign-in returns, error pages keep the menu", .serialized)
struct NavigationTests {
    @Test("only local paths are followed after sign-in")
    func safeNext() {
        #expect(LoginNext.safe("/chains/abc?from=2026-01-01&to=2026-01-31") == "/chains/abc?from=2026-01-01&to=2026-01-31")
        for bad in ["//evil.example/", "/\\evil.example", "https://evil.example/", "evil", "/a b", "/a\r\nSet-Cookie: x", "/login", "/logout", ""] {
            #expect(LoginNext.safe(bad) == nil, "\(bad)")
        }
        #expect(LoginNext.encode("/chains/a?x=1&y=2") == "/chains/a%3Fx%3D1%26y%3D2")
    }

    @Test("a link followed before signing in comes back after it; a hostile next goes home; errors keep the navigation")
    func signInReturns() async throws {
        try await withHousehold { h in
            let bob = h.chains["bob-phone"]!
            let b = h.browser()
            let asked = "/chains/\(bob)/types/HKQuantityTypeIdentifierStepCount?range=30d"
            let first = try await b.request("GET", asked)
            #expect(first.status == 303 || first.status == 302, "\(first.status)")
            let location = try #require(first.header("Location"))
            #expect(location == "/login?next=" + LoginNext.encode(asked), "\(location)")
            let form = try await b.request("GET", location)
            #expect(form.body.contains("name=\"next\" value=\"\(asked.replacingOccurrences(of: "&", with: "&amp;"))\""), "\(form.body)")
            let next = asked.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
            let signedIn = try await b.request("POST", "/login", body: "name=bob&password=\(Household.password)&next=\(next)")
            #expect(signedIn.header("Location") == asked)
            #expect(try await b.request("GET", asked).status == 200)

            // A hostile next is dropped: home, not elsewhere.
            let c = h.browser()
            let evil = "//evil.example/".addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
            let r = try await c.request("POST", "/login", body: "name=cat&password=\(Household.password)&next=\(evil)")
            #expect(r.header("Location") == "/")
            // The root asks for no next.
            #expect(try await h.browser().request("GET", "/").header("Location") == "/login")

            // An error page, signed in: the navigation and sign-out stay.
            let missing = try await b.request("GET", "/chains/\(String(repeating: "0", count: 64))")
            #expect(missing.status == 404)
            #expect(missing.body.contains("<nav>") && missing.body.contains("bob (member)") && missing.body.contains("Sign out"), "\(missing.body)")
            // Signed out, an error page offers no one's navigation.
            let anonymous = try await h.browser().request("POST", "/chains/\(bob)/shares", body: "person=vic&action=share")
            #expect(!anonymous.body.contains("Sign out"))
        }
    }

    @Test("every path of docs/openapi.json answers 405 with Allow to a method it does not declare")
    func undeclaredMethods() async throws {
        let spec = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: repositoryRoot.appendingPathComponent("docs/openapi.json"))) as? [String: Any])
        let paths = try #require(spec["paths"] as? [String: [String: Any]])
        #expect(paths.count >= 20)
        try await withHousehold { h in
            let a = h.browser()
            try await a.signIn("ann", Household.password)
            for (path, operations) in paths.sorted(by: { $0.key < $1.key }) {
                let concrete = path.replacingOccurrences(of: "\\{[a-z]+\\}", with: "1", options: .regularExpression)
                let r = try await a.request("TRACE", concrete)
                #expect(r.status == 405, "TRACE \(path): \(r.status)")
                let allowed = Set((r.header("Allow") ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces).lowercased() })
                #expect(allowed == Set(operations.keys), "\(path): Allow \(allowed.sorted()) against \(operations.keys.sorted())")
            }
        }
    }
}
