import Foundation
import NIOCore
import NIOPosix
import Testing
@testable import HealthProbeArchive
import HealthProbeCanonical
@testable import HealthProbeServer
import HealthProbeProtocol
import HealthProbeNode
import HealthProbeSimulator
import HealthProbeTestSupport

@Suite("Enrollment, TLS and chain isolation")
struct SecurityTests {
    func code(of error: any Error) -> SyncProtocolError.Code? { (error as? SyncProtocolError)?.code }

    @Test("a wrong token and a replayed token are refused; an expired token too, and the device list says it expired; nothing is issued")
    func tokens() async throws {
        let data = TempDir()
        try await withServer(data) { server in
            var wrong = try server.token("a")
            wrong.secret = String(repeating: "0", count: 64)
            await #expect { try await SyncClient.enroll(token: wrong, clientTime: Date().timeIntervalSince1970) } throws: { code(of: $0) == .unauthorized }
            // The real token still works once (the wrong attempt did not consume it)...
            let token = try server.token("b")
            let e = try await SyncClient.enroll(token: token, clientTime: Date().timeIntervalSince1970)
            #expect(e.name == "b" && e.credential.count == 64 && e.fingerprint == server.fingerprint)
            // ...and never again.
            await #expect { try await SyncClient.enroll(token: token, clientTime: Date().timeIntervalSince1970) } throws: { code(of: $0) == .unauthorized }
            #expect(try server.store.registry().devices().first { $0.name == "b" }?.state == .enrolled)
        }
        // Expiry, on the registry with an explicit clock.
        let dir = TempDir()
        let registry = try DeviceRegistry(path: dir.path + "/r.sqlite")
        let secret = try registry.issueToken(name: "late", now: 1000)
        #expect(try registry.devices(now: 1000 + DeviceRegistry.tokenLifetime).first?.state == .tokenIssued)
        #expect(try registry.devices(now: 1000 + DeviceRegistry.tokenLifetime).first?.tokenExpiresAt == 1000 + DeviceRegistry.tokenLifetime)
        #expect(throws: DeviceRegistry.AuthError.self) { try registry.redeem(name: "late", secret: secret, now: 1000 + DeviceRegistry.tokenLifetime + 1) }
        #expect(try registry.devices(now: 1000 + DeviceRegistry.tokenLifetime + 1).first?.state == .tokenExpired)
        _ = try registry.redeem(name: "late", secret: try registry.issueToken(name: "late", now: 5000), now: 5001)
        // Enrolled, it has no token to expire.
        #expect(try registry.devices(now: 5000 + 2 * DeviceRegistry.tokenLifetime).first.map { [$0.state == .enrolled, $0.tokenExpiresAt == nil] } == [true, true])
        #expect(throws: DeviceRegistry.AuthError.self) { try registry.issueToken(name: "late", now: 6000) }  // enrolled: name taken
        #expect(throws: DeviceRegistry.AuthError.self) { try registry.issueToken(name: "bad name!", now: 6000) }
    }

    @Test("the device list's states follow a restore token: issued, restoring once redeemed, enrolled once the chain is taken over; another token for the chain stale from then on, even past its expiry; an unused one expired; the device replaced listed as replaced until revoked; a revoked device revoked")
    func restoreTokenStates() throws {
        let dir = TempDir()
        let registry = try DeviceRegistry(path: dir.path + "/r.sqlite")
        let chain = String(repeating: "c", count: 64), day = DeviceRegistry.tokenLifetime
        func state(_ name: String, _ now: Double) throws -> DeviceRegistry.Device.State? { try registry.devices(now: now).first { $0.name == name }?.state }
        let (old, _) = try registry.redeem(name: "old", secret: try registry.issueToken(name: "old", now: 1000), now: 1001)
        try registry.claim(old, chain: chain, now: 1002)
        let secret = try registry.issueRestoreToken(name: "new", chain: chain, person: nil, now: 1003).secret
        _ = try registry.issueRestoreToken(name: "spare", chain: chain, person: nil, now: 1004)
        #expect(try [state("new", 1005), state("spare", 1005), state("old", 1005)] == [.restoreTokenIssued, .restoreTokenIssued, .enrolled])
        let (new, _) = try registry.redeem(name: "new", secret: secret, now: 1006)
        #expect(try state("new", 1007) == .restoring)
        try registry.authorizeRead(new, chain: chain, now: 1008)
        #expect(try [state("new", 1009), state("spare", 1009), state("spare", 1004 + 2 * day)] == [.enrolled, .restoreTokenStale, .restoreTokenStale])
        // The device replaced holds no chain now, but its credential still works: listed as replaced, by whom.
        #expect(try state("old", 1009) == .replaced && registry.devices(now: 1009).first { $0.name == "old" }?.replacedBy == "new")
        _ = try registry.issueRestoreToken(name: "later", chain: chain, person: nil, now: 1010)
        #expect(try [state("later", 1010 + day), state("later", 1011 + day)] == [.restoreTokenIssued, .tokenExpired])
        try registry.revoke(name: "later", now: 1012 + day)
        try registry.revoke(name: "old", now: 1012 + day)
        #expect(try [state("later", 1013 + day), state("old", 1013 + day)] == [.revoked, .revoked])
    }

    @Test("a revoked device is shut out; a device cannot write or read another device's chain (recorded for the administrator)")
    func revokeAndIsolation() async throws {
        let data = TempDir()
        let a = TempHome()
        try simulate(a, days: 2)
        try await withServer(data) { server in
            let ea = try await server.enroll("a"), eb = try await server.enroll("b")
            let ra = try await SyncClient(node: try a.open(), outbox: a.root + "/outbox").sync(ea)
            #expect(ra.sent == 1)
            try simulate(a, days: 1)
            let node = try a.open()
            let client = SyncClient(node: node, outbox: a.root + "/outbox")
            // Device b presenting a's chain (a copied archive): refused, nothing stored.
            await #expect { try await client.sync(eb) } throws: { code(of: $0) == .forbidden }
            #expect(try server.store.status(node.deviceChainHash).0 == 1)
            // A bundle from b for a's chain, sent without asking for status first: refused at BUNDLE_END and recorded.
            let file = a.root + "/bundle2.jsonl"
            let obs = try await node.archive.writer.read { db in try Int64.fetchAll(db, sql: "SELECT id FROM observations ORDER BY id") }
            let prev = try await node.archive.writer.read { db in try String.fetchOne(db, sql: "SELECT manifest_hash FROM bundle_log WHERE direction = 'sent' AND sequence = 1") }
            let written = try await node.archive.writer.read { db in try BundleFile.write(db, observationID: obs[1], previousManifestHash: prev, to: file) }
            let bytes = Array(try Data(contentsOf: URL(fileURLWithPath: file)))
            var part = ByteBuffer()
            part.writeInteger(UInt32(0), endianness: .big)
            part.writeInteger(UInt32(bytes.count), endianness: .big)
            part.writeBytes(try BundlePartCodec.compress(bytes))
            let reply = try await server.raw(try wire([
                try authFrame(eb),
                try .json(.bundleBegin, .object(["sequence": .int(2), "manifest_hash": .string(written.manifestHash), "parts": .int(1),
                                                 "item_count": .int(written.trailer.itemCount), "uncompressed_size": .int(bytes.count)])),
                SyncFrame(kind: .bundlePart, payload: part),
                try .json(.bundleEnd, .object(["sequence": .int(2), "manifest_hash": .string(written.manifestHash)])),
            ]), until: "forbidden")
            #expect(String(decoding: reply, as: UTF8.self).contains("forbidden"))
            #expect(try server.store.status(node.deviceChainHash).0 == 1)
            let events = try server.store.registry().events(chain: node.deviceChainHash)
            #expect(events.contains { $0.kind == "forbidden" && $0.device == "b" && $0.sequence == 2 })
            let report = try ServerVerifier.run(server.store, mode: .quick)
            #expect(report.first?.checks.contains { $0.name == "sync_refusals" && $0.status == .notice } == true)
            #expect(report.allSatisfy { $0.ok }, "a refusal is a notice, not damage")
            // The owner syncs on; then, revoked, it is shut out.
            let more = try await client.sync(ea)
            #expect(more.sent == 1)
            try server.store.registry().revoke(name: "a", now: Date().timeIntervalSince1970)
            await #expect { try await client.sync(ea) } throws: { code(of: $0) == .unauthorized }
            await #expect { try await SyncClient.household(ea, host: "127.0.0.1", port: server.port, type: nil, from: nil, to: nil, clientTime: Date().timeIntervalSince1970) } throws: {
                code(of: $0) == .unauthorized
            }
        }
    }

    @Test("a plaintext client gets no hello and stores nothing; frames before AUTH get only an error, slower each time")
    func unauthenticated() async throws {
        let data = TempDir()
        try await withServer(data, throttle: AuthThrottle(base: 0.1, maximum: 2)) { server in
            let plain = try await server.raw(try wire([try .json(.chainStatusRequest, .object(["device_chain_hash": .string(String(repeating: "a", count: 64))]))]), plain: true)
            #expect(!plain.starts(with: SyncHello.magic), "a plaintext peer must not get a sync hello")
            #expect(!String(decoding: plain, as: UTF8.self).contains("last_sequence"))
            // Inside TLS but without AUTH: ERROR unauthorized, each answer later than the one before.
            var times: [Duration] = []
            for _ in 0..<4 {
                let start = ContinuousClock.now
                let reply = try await server.raw(try wire([try .json(.chainStatusRequest, .object(["device_chain_hash": .string(String(repeating: "a", count: 64))]))]))
                times.append(ContinuousClock.now - start)
                let text = String(decoding: reply, as: UTF8.self)
                #expect(text.contains("unauthorized") && !text.contains("last_sequence"), "\(text)")
            }
            // The fourth failure waits 0.1 * 2^3 s. (Comparing it with the first answer's time is
            // not robust: under a loaded suite a TLS handshake alone took over 0.9 s.)
            #expect(times[3] >= .milliseconds(800), "\(times)")
            #expect(try server.store.chains().isEmpty)
            // A wrong credential for a real device is refused the same way.
            var e = try await server.enroll("a")
            e.credential = String(repeating: "f", count: 64)
            await #expect { try await SyncClient.household(e, host: "127.0.0.1", port: server.port, type: nil, from: nil, to: nil, clientTime: Date().timeIntervalSince1970) } throws: {
                code(of: $0) == .unauthorized
            }
        }
    }

    @Test("a server with a different certificate is refused by the pin")
    func differentCertificate() async throws {
        let first = TempDir(), second = TempDir()
        var tokenForFirst: EnrollmentToken?
        try await withServer(first) { server in tokenForFirst = try server.token("a") }
        try await withServer(second) { server in
            // The token pins the first server's certificate; the second server answers at the token's address.
            var token = try #require(tokenForFirst)
            token.address = "127.0.0.1:\(server.port)"
            await #expect { try await SyncClient.enroll(token: token, clientTime: Date().timeIntervalSince1970) } throws: { code(of: $0) == .unauthorized }
            #expect(try server.store.registry().devices().isEmpty)
            // A pinned raw connection with the wrong fingerprint never gets to the hello.
            let channel = try await server.tlsChannel(fingerprint: String(repeating: "0", count: 64))
            var got: [UInt8] = []
            do {
                got = try await channel.executeThenClose { inbound, outbound in
                    try await outbound.write(ByteBuffer(bytes: try wire([])))
                    var out: [UInt8] = []
                    for try await c in inbound { out += Array(c.readableBytesView) }
                    return out
                }
            } catch {
                // The handshake failed: the channel closed under the write or the read.
            }
            #expect(got.isEmpty)
        }
    }

    @Test("hp-node household: an admin's node sees every chain side by side with device names and clock offsets")
    func household() async throws {
        let data = TempDir()
        let a = TempHome(), b = TempHome()
        try simulate(a, days: 2)
        try simulate(b, days: 2, seed: 2)
        try await withServer(data) { server in
            try server.store.registry().addPerson(name: "ann", role: .admin, password: nil, now: 1)
            let ea = try await server.enroll("phone-a", person: "ann"), eb = try await server.enroll("phone-b", person: "ann")
            _ = try await SyncClient(node: try a.open(), outbox: a.root + "/outbox").sync(ea)
            _ = try await SyncClient(node: try b.open(), outbox: b.root + "/outbox").sync(eb)
            let report = try await SyncClient.household(eb, host: "127.0.0.1", port: server.port, type: nil, from: nil, to: nil,
                                                        clientTime: Date().timeIntervalSince1970)
            #expect(report.chains.count == 2)
            #expect(Set(report.chains.compactMap(\.deviceName)) == ["phone-a", "phone-b"])
            #expect(report.chains.allSatisfy { $0.clockOffsetSeconds != nil })
            let local = try HouseholdSummary.build(server.store, registry: try server.store.registry())
            #expect(local == report)
            // A device whose clock runs 90 s ahead: the offset is its AUTH time minus the server's time.
            let chain = try b.open().deviceChainHash
            var auth = ByteBuffer()
            try SyncFrameEncoder().encode(data: try .json(.auth, .object(["device_name": .string(eb.name), "credential": .string(eb.credential),
                                                                         "client_time": .string(CanonicalDate.string(Date().timeIntervalSince1970 + 90))])), out: &auth)
            _ = try await server.raw(try wire([]) + Array(auth.readableBytesView) + (try wire(hello: false, [
                try .json(.chainStatusRequest, .object(["device_chain_hash": .string(chain)]))])), until: "last_sequence")
            let offset = try #require(try server.store.registry().chainInfo(chain).clockOffset)
            #expect(abs(offset - 90) < 5, "\(offset)")
        }
    }

    @Test("HOUSEHOLD follows the people model: a member's device gets their own and shared chains, the overlap only among those; the same rule as the web's")
    func householdPeople() async throws {
        let data = TempDir()
        let a = TempHome(), b = TempHome(), c = TempHome(), d = TempHome()
        try simulate(a, days: 2)
        // b and c record the same source: identical strict fingerprints, a possibly shared source.
        try simulate(b, days: 2, seed: 7)
        try simulate(c, days: 2, seed: 7)
        try simulate(d, days: 2, seed: 3)
        try await withServer(data) { server in
            let registry = try server.store.registry()
            for (n, role) in [("ann", People.Role.admin), ("bob", .member), ("cat", .member)] {
                try registry.addPerson(name: n, role: role, password: nil, now: 1)
            }
            let ea = try await server.enroll("ann-phone", person: "ann"), eb = try await server.enroll("bob-phone", person: "bob")
            let ec = try await server.enroll("cat-phone", person: "cat"), ed = try await server.enroll("cat-watch", person: "cat")
            for (home, e) in [(a, ea), (b, eb), (c, ec), (d, ed)] { _ = try await SyncClient(node: try home.open(), outbox: home.root + "/outbox").sync(e) }
            let (ha, hb, hc, hd) = try (a.open().deviceChainHash, b.open().deviceChainHash, c.open().deviceChainHash, d.open().deviceChainHash)
            func household(_ e: NodeEnrollment, type: String? = nil) async throws -> HouseholdSummary.Report {
                try await SyncClient.household(e, host: "127.0.0.1", port: server.port, type: type, from: nil, to: nil, clientTime: Date().timeIntervalSince1970)
            }
            let type = SimulatedType.all[1].identifier
            // Bob alone: his chain, his counts, no overlap (cat's identical chain is not his to compare).
            var bob = try await household(eb, type: type)
            #expect(bob.chains.map(\.chain) == [hb])
            #expect(bob.householdSumOfChains == bob.chains[0].visible)
            #expect(bob.possiblySharedSources.isEmpty)
            // Cat shares her phone's chain with bob: now both, and the overlap between them.
            try registry.share(chain: hc, with: "bob", now: 2)
            bob = try await household(eb, type: type)
            #expect(Set(bob.chains.map(\.chain)) == [hb, hc])
            #expect(!bob.possiblySharedSources.isEmpty)
            #expect(bob.possiblySharedSources.allSatisfy { Set($0.chains) == [hb, hc] })
            #expect(bob.chains.allSatisfy { !$0.daily.isEmpty })
            // Cat reads her two chains; the admin every chain, the same report the CLI builds.
            let cat = try await household(ec)
            #expect(Set(cat.chains.map(\.chain)) == [hc, hd])
            let ann = try await household(ea)
            #expect(Set(ann.chains.map(\.chain)) == [ha, hb, hc, hd])
            #expect(ann == (try HouseholdSummary.build(server.store, registry: registry)))
            // One rule: for every person, the web's readable chains are the chains a device of theirs receives.
            for (name, e) in [("ann", ea), ("bob", eb), ("cat", ec)] {
                let person = try #require(try registry.person(named: name))
                let web = try registry.readableChains(person, among: try server.store.chains())
                #expect(Set(try await household(e).chains.map(\.chain)) == Set(web), "\(name)")
                for chain in try server.store.chains() { #expect(try registry.canRead(person, chain: chain) == web.contains(chain)) }
            }
            // A revoked share ends at once.
            try registry.unshare(chain: hc, from: "bob")
            #expect(try await household(eb).chains.map(\.chain) == [hb])
        }
    }

    @Test("the throttle doubles per failure up to its maximum, forgets after its window and on success")
    func throttle() {
        var t = AuthThrottle(base: 0.25, maximum: 2, window: 60)
        #expect(t.failure(peer: "p", now: 0) == 0.25)
        #expect(t.failure(peer: "p", now: 1) == 0.5)
        #expect(t.failure(peer: "p", now: 2) == 1)
        #expect(t.failure(peer: "p", now: 3) == 2)
        #expect(t.failure(peer: "p", now: 4) == 2)
        #expect(t.failure(peer: "q", now: 4) == 0.25)
        #expect(t.failure(peer: "p", now: 100) == 0.25)
        t.success(peer: "p")
        #expect(t.failure(peer: "p", now: 101) == 0.25)
    }

    @Test("enrollment tokens round-trip; damaged ones say what is wrong")
    func tokenText() throws {
        let t = EnrollmentToken(address: "10.0.0.2:7447", fingerprint: String(repeating: "ab", count: 32), name: "phone", secret: EnrollmentToken.randomSecret())
        #expect(try EnrollmentToken(text: t.text) == t)
        #expect(try EnrollmentToken(text: "  " + t.text + "\n") == t)
        #expect(throws: EnrollmentTokenError.self) { try EnrollmentToken(text: "hello") }
        #expect(throws: EnrollmentTokenError.self) { try EnrollmentToken(text: String(t.text.dropLast(8))) }
        let bad = EnrollmentToken(address: "nowhere", fingerprint: t.fingerprint, name: "phone", secret: t.secret)
        #expect(throws: EnrollmentTokenError.self) { try EnrollmentToken(text: bad.text) }
    }

    @Test("config file: values load, unknown keys and bad values are refused by name")
    func config() throws {
        let dir = TempDir()
        #expect(try ServerConfig.load(dataDirectory: dir.path) == ServerConfig())
        try #"{"listen":"0.0.0.0:7447","metrics_listen":"127.0.0.1:9100","log_level":"debug","idle_timeout_seconds":60,"kept_replicas":16,"apply_threads":3,"disk_reserve_mib":2048}"#
            .write(toFile: dir.path + "/config.json", atomically: true, encoding: .utf8)
        let c = try ServerConfig.load(dataDirectory: dir.path)
        #expect(c.listen == "0.0.0.0:7447" && c.metricsListen == "127.0.0.1:9100" && c.logLevel == "debug" && c.idleTimeoutSeconds == 60 && c.keptReplicas == 16 && c.applyThreads == 3 && c.diskReserveMiB == 2048)
        for (text, needle) in [(#"{"lisen":"x"}"#, "unknown key \"lisen\""), (#"{"listen":"nope"}"#, "HOST:PORT"), (#"{"log_level":"loud"}"#, "log level"),
                               (#"{"idle_timeout_seconds":-1}"#, "positive"), (#"{"kept_replicas":2.5}"#, "whole number"), (#"{"kept_replicas":1001}"#, "1...1000"),
                               (#"{"kept_replicas":0}"#, "positive"), (#"{"apply_threads":65}"#, "\"apply_threads\" must be a whole number 1...64"),
                               (#"{"apply_threads":1.5}"#, "whole number"), (#"{"disk_reserve_mib":0}"#, "positive"), (#"{"disk_reserve_mib":0.5}"#, "whole number"), ("[1]", "object"), ("{", "invalid JSON")] {
            try text.write(toFile: dir.path + "/config.json", atomically: true, encoding: .utf8)
            #expect { try ServerConfig.load(dataDirectory: dir.path) } throws: { "\($0)".contains(needle) }
        }
        #expect(throws: ArchiveError.self) { try ServerConfig.load(dataDirectory: dir.path, path: dir.path + "/missing.json") }
        // The shipped example loads.
        let example = vectorURL("x").deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("deploy/config.example.json").path
        let e = try ServerConfig.load(dataDirectory: dir.path, path: example)
        #expect(e.listen == "0.0.0.0:7447" && e.metricsListen == "127.0.0.1:9447")
        #expect(e.smtp != nil && e.backupTo == "/var/backups/healthprobe" && e.objectStore != nil && e.s3KeepSnapshots == 48 && e.diskReserveMiB == 1024, "every setting in the example is read")
        #expect(e.alerts == AlertThresholds(), "the example's alert thresholds are the defaults")
    }

    @Test("metrics: Prometheus text over HTTP on loopback, counting authentications and bundles, no device names")
    func metrics() async throws {
        let data = TempDir()
        let a = TempHome()
        try simulate(a, days: 1)
        let store = ServerStore(root: data.path)
        try store.create()
        let metrics = ServerMetrics()
        let server = try SyncServer(store: store, metrics: metrics)
        try await withThrowingTaskGroup(of: Void.self) { group in
            let (ports, continuation) = AsyncStream.makeStream(of: Int.self)
            group.addTask { try await server.run(host: "127.0.0.1", port: 0) { continuation.yield($0) } }
            group.addTask { try await metrics.serve(host: "127.0.0.1", port: 0) { continuation.yield($0) } }
            var it = ports.makeAsyncIterator()
            guard let p1 = await it.next(), let p2 = await it.next() else { return }
            defer { group.cancelAll() }
            // Which port is which: the sync server answers TLS; try enrolling on each.
            var syncPort = p1, metricsPort = p2
            let t = TestServer(port: p1, store: store)
            if (try? await t.enroll("probe")) == nil { (syncPort, metricsPort) = (p2, p1) }
            let e = try await TestServer(port: syncPort, store: store).enroll("secret-device-name")
            _ = try await SyncClient(node: try a.open(), outbox: a.root + "/outbox").sync(e)
            let body = try await httpGet(port: metricsPort, path: "/metrics")
            #expect(body.contains("hp_server_bundles_total{result=\"applied\"} 1"), "\(body)")
            #expect(body.contains("hp_server_authentications_total{result=\"ok\"}"))
            #expect(!body.contains("secret-device-name"))
            #expect(try await httpGet(port: metricsPort, path: "/other").contains("not found"))
        }
    }

    func httpGet(port: Int, path: String) async throws -> String {
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton).connect(host: "127.0.0.1", port: port) { ch in
            ch.eventLoop.makeCompletedFuture { try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: ch) }
        }
        return try await channel.executeThenClose { inbound, outbound in
            try await outbound.write(ByteBuffer(string: "GET \(path) HTTP/1.1\r\nHost: x\r\n\r\n"))
            var out = ""
            for try await c in inbound { out += String(buffer: c) }
            return out
        }
    }
}

@Suite("Possibly shared sources")
struct SharedSourceMergeTests {
    @Test("one merge over the chains gives, for every pair and type, the same counts as a join per pair; pages smaller than a type change nothing")
    func mergeEqualsPairwise() async throws {
        let data = TempDir()
        // Four chains: two pairs of one simulated person (identical records), and overlaps across pairs on no record.
        let homes = (0..<4).map { _ in TempHome() }
        for (i, h) in homes.enumerated() { try simulate(h, days: 2 + i % 2, seed: UInt64(7 + i / 2 * 3)) }
        try await withServer(data) { server in
            for (i, h) in homes.enumerated() {
                _ = try await SyncClient(node: try h.open(), outbox: h.root + "/outbox").sync(try await server.enroll("d\(i)"))
            }
            let chains = try server.store.chains()
            #expect(chains.count == 4)
            var pairwise: [HouseholdSummary.SharedSources] = []
            for i in chains.indices { for j in chains.indices where j > i { pairwise += try HouseholdSummary.identical(server.store, chains[i], chains[j], type: nil) } }
            let merged = try HouseholdSummary.overlaps(server.store, chains: chains, type: nil)
            #expect(merged == pairwise)
            #expect(merged.contains { $0.identicalStrictFingerprints > 0 })
            #expect(try HouseholdSummary.overlaps(server.store, chains: chains, type: nil, page: 7) == pairwise)
            let type = SimulatedType.all[1].identifier
            #expect(try HouseholdSummary.overlaps(server.store, chains: chains, type: type) == pairwise.filter { $0.typeIdentifier == type })
            #expect(try HouseholdSummary.overlaps(server.store, chains: [chains[0]], type: nil).isEmpty)
        }
    }
}
