import Foundation
import GRDB
import NIOCore
import Testing
@testable import HealthProbeArchive
import HealthProbeCanonical
@testable import HealthProbeServer
import HealthProbeProtocol
import HealthProbeNode
import HealthProbeTestSupport
@testable import HealthProbeSimulator

/// A node brings its history back from its server (Protocol/README.md section 8): a real
/// server on 127.0.0.1 over TLS, real nodes, real archives.
@Suite("Node restore from the server")
struct NodeRestoreTests {
    /// The chain-state digest at each of the node's observations, oldest first.
    static func states(_ node: NodeArchive) throws -> [ChainStateDigest.Result] {
        let ids = try node.archive.writer.read { db in try ObservationQueries.list(db, chainID: node.deviceChainID).map(\.id) }
        return try ids.map { try node.archive.chainState(observation: $0) }
    }

    static func restore(_ home: TempHome, _ e: NodeEnrollment) async throws -> NodeRestore.Report {
        try await NodeRestore(node: try home.open()).restore(e)
    }

    static func sync(_ home: TempHome, _ e: NodeEnrollment) async throws -> SyncClient.Report {
        try await SyncClient(node: try home.open(), outbox: home.root + "/outbox").sync(e)
    }

    /// The kept bundle at `sequence` rewritten as plain lines with one value changed: in its
    /// first line holding a numeric value, or its `last`.
    static func alterValue(_ store: ServerStore, _ chain: String, sequence: Int, last: Bool) throws {
        let path = try #require(store.storedBundlePath(chain, sequence: sequence))
        var lines = Array(try StoredBundleLines(path: path))
        let holds: ([UInt8]) -> Bool = { String(decoding: $0, as: UTF8.self).contains("\"numeric_value\":") }
        let i = try #require(last ? lines.lastIndex(where: holds) : lines.firstIndex(where: holds))
        var text = String(decoding: lines[i], as: UTF8.self)
        let range = try #require(text.range(of: "\"numeric_value\":"))
        text.insert("1", at: range.upperBound)
        lines[i] = Array(text.utf8)
        try FileManager.default.removeItem(atPath: path)
        try Data(lines.flatMap { $0 + [0x0A] }).write(to: URL(fileURLWithPath: store.bundlePath(chain, sequence: sequence, gzip: false)))
    }

    @Test("against a server that speaks only versions 1 and 2 a node syncs with 1 and restores with 2 (the chain state before the parts); against this one it restores with 3: the same chain state at every observation either way")
    func versionsTwoAndThree() async throws {
        var restored: [[ChainStateDigest.Result]] = []
        for versions: ClosedRange<UInt16> in [1...2, SyncHello.versions] {
            let home = TempHome()
            try simulate(home, days: 2)
            try simulate(home, days: 1)
            try await withServer(TempDir(), versions: versions) { server in
                let e = try await server.enroll("phone")
                _ = try await Self.sync(home, e)
                let original = try Self.states(try home.open())
                try home.home.reset(newChain: false)
                let report = try await Self.restore(home, e)
                #expect(report.restored == 2 && report.chainStateDigest == original.last?.digest, "\(versions)")
                let states = try Self.states(try home.open())
                #expect(states == original, "\(versions)")
                restored.append(states)
            }
        }
        #expect(restored.count == 2 && restored[0].count == 2)
    }

    @Test("a node reset with --keep-chain restores every observation (the chain state equal to the original's and the server's at each), then captures and syncs on as the same chain; run again, it has nothing to do")
    func resetRestoresAndSyncsOn() async throws {
        let data = TempDir()
        let home = TempHome()
        try simulate(home, days: 2)
        try simulate(home, days: 3)
        try await withServer(data) { server in
            let e = try await server.enroll("phone")
            _ = try await Self.sync(home, e)
            let (original, chain) = try { let n = try home.open(); return (try Self.states(n), n.deviceChainHash) }()
            #expect(original.count == 2)

            try home.home.reset(newChain: false)
            let report = try await Self.restore(home, e)
            #expect(report.restored == 2 && report.lastSequence == 2 && report.hadSequence == 0)
            #expect(report.chainStateDigest == original.last?.digest && report.visibleRecords == original.last?.visibleCount)
            try {
                let node = try home.open()
                #expect(node.deviceChainHash == chain)
                #expect(try Self.states(node) == original, "the chain state at every observation equals the original's")
                #expect(try digests(node, server.store).allSatisfy { $0.0 == $0.1 }, "and the server's")
                #expect(try ArchiveVerifier.run(node, mode: .full).ok)
            }()

            let again = try await Self.restore(home, e)
            #expect(again.restored == 0 && again.hadSequence == 2)

            // Captures and syncs on: the server takes sequence 3 as the same chain. The simulated
            // person goes on from day 5, where the restored notes say the last capture reached.
            try simulate(home, days: 4)
            #expect(try home.open().archive.metadata(SimulatorCapture.dayKey) == "9")
            let sync = try await Self.sync(home, e)
            #expect(sync.serverHadSequence == 2 && sync.sent == 1 && sync.lastSequence == 3)
            let pairs = try digests(try home.open(), server.store)
            #expect(pairs.count == 3 && pairs.allSatisfy { $0.0 == $0.1 })
        }
    }

    @Test("a replacement device with the old keys and an admin's restore token takes the chain over when it first asks for it: it restores and syncs on; the old device may no longer write or read it; key files of another chain take nothing and are named")
    func replacementDevice() async throws {
        let data = TempDir()
        let old = TempHome()
        try simulate(old, days: 2)
        try await withServer(data) { server in
            let registry = try server.store.registry()
            _ = try registry.addPerson(name: "ana", role: .member, password: nil, now: Date().timeIntervalSince1970)
            let e = try await server.enroll("old-phone", person: "ana")
            _ = try await Self.sync(old, e)
            let chain = try old.open().deviceChainHash

            // The new phone: the old keys (its Keychain backup), nothing else.
            let new = TempHome()
            try FileManager.default.createDirectory(atPath: new.root + "/keys", withIntermediateDirectories: true)
            for f in [KeyStore.secretFile, KeyStore.chainSeedFile] {
                try FileManager.default.copyItem(atPath: old.root + "/keys/" + f, toPath: new.root + "/keys/" + f)
            }
            // A token for someone else's person is refused; the owner's person is taken by default.
            _ = try registry.addPerson(name: "bo", role: .member, password: nil, now: Date().timeIntervalSince1970)
            #expect(throws: DeviceRegistry.AuthError.self) {
                _ = try registry.issueRestoreToken(name: "x", chain: chain, person: try registry.personForEnrollment("bo"), now: Date().timeIntervalSince1970)
            }
            let secret = try registry.issueRestoreToken(name: "new-phone", chain: chain, person: nil, now: Date().timeIntervalSince1970).secret
            // A second token for the same chain, issued before the first is taken over: once the
            // first moved the chain, the second is refused and takes nothing.
            let second = try registry.issueRestoreToken(name: "other-phone", chain: chain, person: nil, now: Date().timeIntervalSince1970 - 1).secret
            func device(_ name: String) throws -> DeviceRegistry.Device? { try registry.devices().first { $0.name == name } }
            #expect(try device("new-phone").map { [$0.state == .restoreTokenIssued, $0.restoreChain == chain] } == [true, true])
            let token = EnrollmentToken(address: "127.0.0.1:\(server.port)", fingerprint: server.fingerprint, name: "new-phone", secret: secret)
            let e2 = try await SyncClient.enroll(token: token, clientTime: Date().timeIntervalSince1970)
            #expect(try device("new-phone")?.state == .restoring)
            // Enrolled, it holds nothing yet: the chain moves when the new phone asks for it with the old keys.
            #expect(try registry.devices().first { $0.name == "new-phone" }?.chains.isEmpty == true)
            #expect(try registry.devices().first { $0.name == "old-phone" }?.chains == [chain])
            // Key files of another chain (a mix-up) take nothing, say so, and the old phone syncs on.
            let wrong = TempHome(), wrongEmpty = TempHome()
            try simulate(wrong, days: 1)
            _ = try wrongEmpty.open()
            for ask in [{ _ = try await Self.restore(wrongEmpty, e2) }, { _ = try await Self.sync(wrong, e2) }] as [() async throws -> Void] {
                await #expect { try await ask() } throws: { error in
                    (error as? SyncProtocolError)?.code == .forbidden && "\(error)".contains("the one its key files make: they are not the key files of the device it replaces, and nothing was taken over")
                }
            }
            #expect(try registry.devices().first { $0.name == "new-phone" }?.chains.isEmpty == true)
            try simulate(old, days: 3)
            #expect(try await Self.sync(old, e).lastSequence == 2)
            let original = try Self.states(try old.open())
            let report = try await Self.restore(new, e2)
            #expect(report.restored == 2 && report.lastSequence == 2)
            #expect(try Self.states(try new.open()) == original)
            #expect(try registry.devices().first { $0.name == "new-phone" }?.chains == [chain])
            // Taken over, the new phone is a plain enrolled device; the other token is stale, and the list says so.
            #expect(try device("new-phone").map { [$0.state == .enrolled, $0.restoreChain == nil] } == [true, true])
            #expect(try device("other-phone").map { [$0.state == .restoreTokenStale, $0.restoreChain == chain] } == [true, true])
            let stale = EnrollmentToken(address: "127.0.0.1:\(server.port)", fingerprint: server.fingerprint, name: "other-phone", secret: second)
            await #expect { _ = try await SyncClient.enroll(token: stale, clientTime: Date().timeIntervalSince1970) } throws: { error in
                "\(error)".contains("issued before its chain moved to another device")
            }
            #expect(try registry.devices().first { $0.name == "other-phone" }?.chains.isEmpty == true)
            #expect(try registry.devices().first { $0.name == "new-phone" }?.person == "ana")

            try simulate(new, days: 3)
            let sync = try await Self.sync(new, e2)
            #expect(sync.sent == 1 && sync.lastSequence == 3)
            // The old device: its chain is no longer its own.
            try simulate(old, days: 5)
            await #expect { _ = try await Self.sync(old, e) } throws: { error in
                (error as? SyncProtocolError)?.code == .forbidden
            }
            try old.home.reset(newChain: false)
            await #expect { _ = try await Self.restore(old, e) } throws: { ($0 as? SyncProtocolError)?.code == .forbidden }
            #expect(try registry.audit(limit: 20).contains { $0.action == .chainTransfer && $0.via == .device && $0.target == chain && $0.detail.contains("old-phone") })
        }
    }

    @Test("a restore token's chain is taken over by whichever request names it first: a RESTORE_REQUEST alone over the wire, a bundle's claim; another chain is forbidden and binds nothing; of two tokens redeemed before either took over, the second is refused when it would; a device revoked after redeeming takes nothing")
    func takeOverPaths() async throws {
        let data = TempDir()
        let old = TempHome()
        try simulate(old, days: 2)
        try await withServer(data) { server in
            let registry = try server.store.registry()
            let e = try await server.enroll("old-phone")
            _ = try await Self.sync(old, e)
            let chain = try old.open().deviceChainHash, other = String(repeating: "e", count: 64)
            let now = Date().timeIntervalSince1970
            func redeem(_ name: String) async throws -> NodeEnrollment {
                let secret = try registry.issueRestoreToken(name: name, chain: chain, person: nil, now: now).secret
                return try await SyncClient.enroll(token: EnrollmentToken(address: "127.0.0.1:\(server.port)", fingerprint: server.fingerprint, name: name, secret: secret),
                                                   clientTime: Date().timeIntervalSince1970)
            }
            func ask(_ e: NodeEnrollment, _ chain: String) async throws {
                try await SyncSession.with(host: "127.0.0.1", port: server.port, fingerprint: server.fingerprint, version: SyncHello.bundleFormatVersion) { session in
                    try await session.authenticate(name: e.name, credential: e.credential, clientTime: Date().timeIntervalSince1970)
                    _ = try await session.request(try .json(.restoreRequest, .object(["device_chain_hash": .string(chain), "sequence": .int(1)])))
                }
            }
            func owner() throws -> String? { try registry.devices().first { $0.chains.contains(chain) }?.name }
            let a = try await redeem("new-a"), b = try await redeem("new-b")
            #expect(try owner() == "old-phone")
            // Another chain: forbidden, nothing bound, and the token still good for its own.
            await #expect { try await ask(a, other) } throws: { ($0 as? SyncProtocolError)?.code == .forbidden && "\($0)".contains("but named chain eeeeeeeeeeeeeeee") }
            #expect(try owner() == "old-phone" && registry.devices().first { $0.name == "new-a" }?.chains.isEmpty == true)
            // A RESTORE_REQUEST alone (no CHAIN_STATUS first) takes it over.
            try await ask(a, chain)
            #expect(try owner() == "new-a")
            // The other token, redeemed while the chain was still the old phone's, takes nothing now.
            await #expect { try await ask(b, chain) } throws: { ($0 as? SyncProtocolError)?.code == .forbidden && "\($0)".contains("issued before its chain moved") }
            #expect(try owner() == "new-a")

            // A bundle's claim takes a pending chain over too; a device revoked after redeeming takes nothing.
            let c = try await redeem("new-c"), d = try await redeem("new-d")
            let cID = try registry.authenticate(name: c.name, credential: c.credential)
            #expect(throws: DeviceRegistry.AuthError.self) { try registry.claim(cID, chain: other, now: now) }
            #expect(try registry.claim(cID, chain: chain, now: now) == false, "taken over, not newly bound")
            #expect(try owner() == "new-c")
            let dID = try registry.authenticate(name: d.name, credential: d.credential)
            try registry.revoke(name: "new-d", now: now)
            #expect { try registry.authorizeRead(dID, chain: chain) } throws: { ($0 as? DeviceRegistry.AuthError)?.code == .unauthorized }
            #expect(try owner() == "new-c")
        }
    }

    @Test("a device asking for another chain's bundles is refused (forbidden, recorded for the admin); a version 1 connection may not ask; a sequence the server does not hold is not_found")
    func refusals() async throws {
        let data = TempDir()
        let phone = TempHome()
        try simulate(phone, days: 2)
        try await withServer(data) { server in
            let e = try await server.enroll("phone")
            _ = try await Self.sync(phone, e)
            let chain = try phone.open().deviceChainHash
            let tablet = try await server.enroll("tablet")
            func ask(_ e: NodeEnrollment, chain: String, sequence: Int, version: UInt16 = 2) async throws {
                try await SyncSession.with(host: "127.0.0.1", port: server.port, fingerprint: server.fingerprint, version: version) { session in
                    try await session.authenticate(name: e.name, credential: e.credential, clientTime: Date().timeIntervalSince1970)
                    _ = try await session.request(try .json(.restoreRequest, .object(["device_chain_hash": .string(chain), "sequence": .int(sequence)])))
                }
            }
            await #expect { try await ask(tablet, chain: chain, sequence: 1) } throws: { ($0 as? SyncProtocolError)?.code == .forbidden }
            let events = try server.store.registry().events()
            #expect(events.contains { $0.kind == "forbidden" && $0.device == "tablet" && $0.detail.contains("RESTORE_REQUEST") })
            await #expect { try await ask(e, chain: chain, sequence: 1, version: 1) } throws: {
                ($0 as? SyncProtocolError)?.code == .unexpectedMessage && "\($0)".contains("protocol version 2")
            }
            await #expect { try await ask(e, chain: chain, sequence: 2) } throws: { ($0 as? SyncProtocolError)?.code == .notFound }
            // A chain no device owns is nobody's to fetch.
            await #expect { try await ask(tablet, chain: String(repeating: "f", count: 64), sequence: 1) } throws: { ($0 as? SyncProtocolError)?.code == .forbidden }
        }
    }

    @Test("of three kept bundles, the first or the second altered: the node refuses that one by its own verification while the next is already asked for; the bundles before it stay, nothing after it is stored", arguments: [1, 2])
    func alteredAmongSeveral(altered: Int) async throws {
        let data = TempDir()
        let home = TempHome()
        try simulate(home, days: 2)
        try simulate(home, days: 3)
        try simulate(home, days: 4)
        try await withServer(data) { server in
            let e = try await server.enroll("phone")
            _ = try await Self.sync(home, e)
            let chain = try home.open().deviceChainHash
            #expect(try server.store.storedBundlePath(chain, sequence: 3) != nil)
            try Self.alterValue(server.store, chain, sequence: altered, last: true)

            try home.home.reset(newChain: false)
            await #expect { _ = try await Self.restore(home, e) } throws: { error in "\(error)".contains("hash") }
            let archive = try Archive.open(path: home.home.archivePath, mode: .readOnly)
            let rows = try await archive.writer.read { db in
                [try Int.fetchOne(db, sql: "SELECT count(*) FROM observations"), try Int.fetchOne(db, sql: "SELECT count(DISTINCT sequence) FROM bundle_log"),
                 try Int.fetchOne(db, sql: "SELECT max(sequence) FROM bundle_log") ?? 0]
            }
            #expect(rows == [altered - 1, altered - 1, altered - 1], "the bundles before the altered one, and only they")
        }
    }

    @Test("a kept bundle damaged on the server's disk behind intact member headers is named by the server as it is sent (an administrator's fix with it); the node stores nothing of it")
    func damagedKeptBundleNamed() async throws {
        try await restoreRefused(after: { store, chain in
            // One byte of the first member's deflate data (a new file: the replica's hard link is not touched).
            let path = try #require(store.storedBundlePath(chain, sequence: 1))
            var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
            bytes[33 + 40] ^= 0x10
            try FileManager.default.removeItem(atPath: path)
            try Data(bytes).write(to: URL(fileURLWithPath: path))
        }) { error in
            "\(error)".contains("kept bundle cannot be sent") && "\(error)".contains("damaged at byte 0") && "\(error)".contains("hp-server verify --full")
        }
    }

    @Test("a kept bundle altered on the server is refused by the node's own verification: nothing of it is stored")
    func alteredBundleRefused() async throws {
        try await restoreRefused(after: { store, chain in try Self.alterValue(store, chain, sequence: 1, last: false) }) { "\($0)".contains("hash") }
    }

    /// Syncs two simulated days, changes the server's kept bundle with `alter` (given the store and
    /// the chain), resets the node keeping its chain: its restore throws as `refused` expects, and
    /// stores nothing.
    func restoreRefused(after alter: (ServerStore, String) throws -> Void, _ refused: @escaping (any Error) -> Bool) async throws {
        let data = TempDir()
        let home = TempHome()
        try simulate(home, days: 2)
        try await withServer(data) { server in
            let e = try await server.enroll("phone")
            _ = try await Self.sync(home, e)
            try alter(server.store, try home.open().deviceChainHash)
            try home.home.reset(newChain: false)
            await #expect(performing: { _ = try await Self.restore(home, e) }, throws: refused)
            let archive = try Archive.open(path: home.home.archivePath, mode: .readOnly)
            let rows = try await archive.writer.read { db in
                [try Int.fetchOne(db, sql: "SELECT count(*) FROM observations"), try Int.fetchOne(db, sql: "SELECT count(*) FROM bundle_log")]
            }
            #expect(rows == [0, 0])
        }
    }
}
