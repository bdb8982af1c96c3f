import Foundation
import Testing
import HealthProbeServer
import HealthProbeTestSupport
@testable import HealthProbeWeb

/// The overview and the API tell each device's state with its reason and what to do.
@Suite("Device state on the page", .serialized)
struct DeviceStatePageTests {
    @Test("a refused device says refused with the reason and the fix, its last good sync unchanged; a revoked one says revoked")
    func refusedAndRevoked() async throws {
        try await withHousehold { h in
            let bob = h.chains["bob-phone"]!
            let b = h.browser()
            try await b.signIn("bob", Household.password)
            let before = try await b.request("GET", "/api/v1/overview").body
            #expect(before.contains("\"state\":\"syncing\""))
            let registry = try h.store.registry()
            let lastSync = try registry.chainFacts(bob).lastSync
            try registry.recordRefusal(chain: bob, code: "divergence", detail: "bundle 1 differs", now: Date().timeIntervalSince1970)
            let api = try await b.request("GET", "/api/v1/overview").body
            #expect(api.contains("\"state\":\"refused\"") && api.contains("\"refusal_code\":\"divergence\""))
            #expect(try registry.chainFacts(bob).lastSync == lastSync)
            let page = try await b.request("GET", "/").body
            #expect(page.contains("device-state refused") && page.contains("What to do:") && page.contains("hp-server chains"))
            let chainPage = try await b.request("GET", "/chains/\(bob)").body
            #expect(chainPage.contains("device-state refused") && chainPage.contains("What to do:"))
            try registry.revoke(name: "bob-phone", now: Date().timeIntervalSince1970)
            #expect(try await b.request("GET", "/api/v1/overview").body.contains("\"state\":\"revoked\""))
            #expect(try await b.request("GET", "/").body.contains("device-state revoked"))
        }
    }
}
