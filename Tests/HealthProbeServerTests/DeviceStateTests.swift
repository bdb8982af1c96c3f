import Foundation
import Testing
@testable import HealthProbeServer
import HealthProbeProtocol
import HealthProbeNode
import HealthProbeTestSupport

/// A refused sync never counts as a sync, and each chain's device has one state with its reason.
@Suite("Device state")
struct DeviceStateTests {
    @Test("a node reset as a reinstalled app is refused as divergence: its last good sync stays, its state says refused, with the reason and the fix")
    func resetNodeIsRefused() async throws {
        let data = TempDir()
        let home = TempHome()
        try simulate(home, days: 2)
        try await withServer(data) { server in
            let e = try await server.enroll("phone")
            _ = try await SyncClient(node: try home.open(), outbox: home.root + "/outbox").sync(e)
            let chain = try home.open().deviceChainHash
            let registry = try server.store.registry()
            // The first connection's end is recorded too, just after the client returns: settled first.
            var synced = try #require(try registry.chainFacts(chain).lastSync), before = -1.0
            for _ in 0..<100 where synced != before {
                before = synced
                try await Task.sleep(for: .milliseconds(300))
                synced = try #require(try registry.chainFacts(chain).lastSync)
            }
            #expect(DeviceState.of(try registry.chainFacts(chain), now: synced + 60).state == .syncing)
            // Up to date: a status-only connection that ends cleanly is a good sync.
            _ = try await SyncClient(node: try home.open(), outbox: home.root + "/outbox").sync(e)
            // (recorded when the server sees each connection end, just after the client returns: wait
            // until the last good sync has moved and holds still, so no late recording of either
            // connection lands during the refused one below)
            var again = synced, previous = -1.0
            for _ in 0..<100 where again == synced || again != previous {
                previous = again
                try await Task.sleep(for: .milliseconds(300))
                again = try #require(try registry.chainFacts(chain).lastSync)
            }
            #expect(again > synced)

            // Reinstalled: the archive is gone, the chain's seed kept; a different first observation.
            try home.home.reset(newChain: false)
            try simulate(home, days: 1, seed: 9)
            let node = try home.open()
            #expect(node.deviceChainHash == chain)
            let (lines, hash) = try bundleLines(node, 1, previous: nil)
            let reply = try await server.raw(try wire([try authFrame(e), try .json(.chainStatusRequest, .object(["device_chain_hash": .string(chain)]))]
                                                      + ChainBindingTests.bundleFrames(lines, hash: hash)), until: "\"sequence\"")
            #expect(String(decoding: reply, as: UTF8.self).contains("divergence"))
            let facts = try registry.chainFacts(chain)
            #expect(facts.lastSync == again, "a refused sync never moves the last good sync")
            let state = DeviceState.of(facts, now: Date().timeIntervalSince1970)
            #expect(state.state == .refused && state.refusalCode == "divergence")
            #expect(state.reason.contains("differs") && state.fix.contains("hp-server chains"))
            #expect(!state.reason.contains(chain) && !state.fix.contains(chain))
        }
    }

    @Test("a node reset with --keep-chain syncs: it says divergence, and the server records the refusal (the device shows refused, its last good sync unchanged), whether it has fewer or as many observations")
    func resetNodeSyncs() async throws {
        let data = TempDir()
        let home = TempHome()
        try simulate(home, days: 2)
        try simulate(home, days: 1)
        try await withServer(data) { server in
            let e = try await server.enroll("phone")
            _ = try await SyncClient(node: try home.open(), outbox: home.root + "/outbox").sync(e)
            let chain = try home.open().deviceChainHash
            let registry = try server.store.registry()
            // The server records the good sync when it sees the connection end: wait until it has, and it holds still.
            var synced: Double?
            for _ in 0..<100 {
                try await Task.sleep(for: .milliseconds(300))
                let now = try registry.chainFacts(chain).lastSync
                if now != nil && now == synced { break }
                synced = now
            }
            let settled = try #require(synced)
            // Reinstalled: one observation where the server holds two.
            try home.home.reset(newChain: false)
            try simulate(home, days: 1, seed: 9)
            do {
                _ = try await SyncClient(node: try home.open(), outbox: home.root + "/outbox").sync(e)
                Issue.record("a diverged node synced")
            } catch let error as SyncProtocolError {
                #expect(error.code == .divergence && error.message.contains("reset or reinstalled"), "\(error)")
            }
            try await Task.sleep(for: .milliseconds(300))
            var facts = try registry.chainFacts(chain)
            #expect(facts.lastRefusalCode == "divergence" && facts.lastSync == settled)
            #expect(DeviceState.of(facts, now: Date().timeIntervalSince1970).state == .refused)
            // As many observations as the server, the last one different: the same.
            try simulate(home, days: 1, seed: 9)
            let before = try #require(facts.lastRefusedAt)
            await #expect(throws: SyncProtocolError.self) { _ = try await SyncClient(node: try home.open(), outbox: home.root + "/outbox").sync(e) }
            try await Task.sleep(for: .milliseconds(300))
            facts = try registry.chainFacts(chain)
            #expect(try #require(facts.lastRefusedAt) > before && facts.lastSync == settled)
            // Nothing of the diverged history was stored: the replica still verifies as the original.
            #expect(try server.store.chains() == [chain])
        }
    }

    @Test("states: never, syncing, silent after three days, refused until a good sync follows, revoked over all")
    func states() {
        let t = 1_800_000_000.0
        #expect(DeviceState.of(.init(), now: t).state == .never)
        #expect(DeviceState.of(.init(lastSync: t - 3600), now: t).state == .syncing)
        let silent = DeviceState.of(.init(lastSync: t - 4 * 86400), now: t)
        #expect(silent.state == .silent && silent.since == t - 4 * 86400)
        #expect(DeviceState.of(.init(lastSync: t - 3600, lastRefusedAt: t - 60, lastRefusalCode: "bundle_invalid"), now: t).state == .refused)
        #expect(DeviceState.of(.init(lastSync: t - 30, lastRefusedAt: t - 60, lastRefusalCode: "bundle_invalid"), now: t).state == .syncing)
        #expect(DeviceState.of(.init(deviceRevokedAt: t - 10, lastSync: t - 5), now: t).state == .revoked)
    }
}
