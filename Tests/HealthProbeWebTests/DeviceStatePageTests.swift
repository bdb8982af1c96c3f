import Foundation
import Testing
import HealthProbeServer
import HealthProbeNode
import HealthProbeProtocol
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

extension DeviceStatePageTests {
    @Test("a device replaced by a restore token's take-over that still tries to sync shows on its chain as replaced, with what to do, not as refused bundles, and the chain's state at a glance stays what it was; another device refused on the chain still counts as refused")
    func replacedDevice() async throws {
        try await withHousehold { h in
            let bob = h.chains["bob-phone"]!
            let registry = try h.store.registry()
            let now = Date().timeIntervalSince1970
            let secret = try registry.issueRestoreToken(name: "bob-new", chain: bob, person: nil, now: now).secret
            let token = EnrollmentToken(address: "127.0.0.1:\(h.syncPort)", fingerprint: h.fingerprint, name: "bob-new", secret: secret)
            let e = try await SyncClient.enroll(token: token, clientTime: now)
            _ = try registry.claim(try registry.authenticate(name: e.name, credential: e.credential), chain: bob, now: now)
            let b = h.browser()
            try await b.signIn("bob", Household.password)
            /// Each chain's glance in the overview, in order.
            func glances(_ api: String) -> [String] {
                api.split(separator: "\"glance\":").dropFirst().map { String($0.prefix { $0 != "}" }) }
            }
            let before = glances(try await b.request("GET", "/api/v1/overview").body)
            // The old phone syncs once more: the server refuses it (forbidden) and records it so.
            try registry.recordEvent(kind: "forbidden", chain: bob, sequence: 3, device: "bob-phone", detail: "BUNDLE_BEGIN: not this device's chain", now: now)
            let api = try await b.request("GET", "/api/v1/overview").body
            #expect(api.contains("\"kind\":\"replaced_device\"") && !api.contains("refused_bundles"), "\(api)")
            #expect(api.contains("bob-phone was replaced by bob-new and has tried to sync this history once since; nothing of it was stored"))
            #expect(glances(api) == before && !before.isEmpty, "the chain's state at a glance is what it was")
            let page = try await b.request("GET", "/chains/\(bob)").body
            #expect(page.contains("alert replaced_device") && page.contains("an administrator can revoke it on the admin page"))
            // Any other device refused on the chain is still a refusal to look at.
            try registry.recordEvent(kind: "forbidden", chain: bob, sequence: 3, device: "ann-phone", detail: "BUNDLE_BEGIN: not this device's chain", now: now)
            let after = try await b.request("GET", "/api/v1/overview").body
            #expect(after.contains("\"kind\":\"refused_bundles\"") && after.contains("1 bundle(s) refused") && after.contains("\"kind\":\"replaced_device\""))
            // Revoked, the old phone is dealt with: its note goes, and its attempts are not refusals either.
            try registry.revoke(name: "bob-phone", now: now)
            let revoked = try await b.request("GET", "/api/v1/overview").body
            #expect(!revoked.contains("replaced_device") && revoked.contains("1 bundle(s) refused"), "\(revoked)")
        }
    }
}
