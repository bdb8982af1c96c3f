import Foundation
import NIOCore
import Testing
@testable import HealthProbeArchive
@testable import HealthProbeServer
import HealthProbeProtocol
import HealthProbeCanonical
import HealthProbeNode
import HealthProbeTestSupport

/// A first bundle built as a node's outbox builds it, in parts of `partSize` bytes, for raw frames.
struct RawBundle {
    let begin: SyncFrame
    let parts: [SyncFrame]
    let end: SyncFrame
    /// The same bundle streamed (version 3): its `BUNDLE_STREAM_BEGIN` and `BUNDLE_STREAM_END`.
    let streamBegin: SyncFrame
    let streamEnd: SyncFrame

    init(_ node: NodeArchive, dir: String, partSize: Int = 16 << 10, lines edit: (([UInt8]) -> [UInt8])? = nil) async throws {
        let path = dir + "/raw.parts"
        let obs = try await node.archive.writer.read { db in try Int64.fetchOne(db, sql: "SELECT min(id) FROM observations") }
        let written = try await node.archive.readSnapshot { db in
            try OutboxBundle.write(db, observationID: obs!, previousManifestHash: nil, to: path, partSize: partSize)
        }
        let fd = open(path, O_RDONLY)
        defer { close(fd) }
        var frames: [SyncFrame] = []
        var compressed: [UInt8] = []
        for (index, p) in written.parts.enumerated() {
            try OutboxBundle.read(p, fd: fd, into: &compressed)
            var size = p.size
            if let edit {
                // The part's lines changed (its size with them), compressed again.
                var inflated: [UInt8] = []
                try compressed.withUnsafeBytes { try BundlePartCodec.inflate($0, declaredSize: p.size, into: &inflated) }
                let changed = edit(inflated)
                size = changed.count
                compressed = try BundlePartCodec.compress(changed)
            }
            var payload = ByteBuffer()
            payload.writeInteger(UInt32(index), endianness: .big)
            payload.writeInteger(UInt32(size), endianness: .big)
            payload.writeBytes(compressed)
            frames.append(SyncFrame(kind: .bundlePart, payload: payload))
        }
        let total = frames.reduce(0) { $0 + Int($1.payload.getInteger(at: 4, endianness: .big, as: UInt32.self)!) }
        let declared: JSONValue = .object(["sequence": .int(1), "manifest_hash": .string(written.manifestHash), "parts": .int(frames.count),
                                           "item_count": .int(written.trailer.itemCount), "uncompressed_size": .int(total)])
        begin = try .json(.bundleBegin, declared)
        streamBegin = try .json(.bundleStreamBegin, .object(["sequence": .int(1)]))
        streamEnd = try .json(.bundleStreamEnd, declared)
        parts = frames
        end = try .json(.bundleEnd, .object(["sequence": .int(1), "manifest_hash": .string(written.manifestHash)]))
    }
}

/// The count of a server metric with `label`, 0 when absent.
func metricCount(_ metrics: ServerMetrics, _ name: String, _ label: String) -> Int {
    for line in metrics.text().split(separator: "\n") where line.hasPrefix(name + "{" + label + "}") {
        return Int(line.split(separator: " ").last ?? "") ?? 0
    }
    return 0
}

@Suite("A bundle verified and applied while its parts arrive")
struct ArrivingApplyTests {
    /// A node with three days captured and its first bundle as raw frames (`edit`: its parts' lines changed).
    struct Fixture {
        let home: TempHome
        let node: NodeArchive
        let dir: TempDir
        let bundle: RawBundle

        static func make(lines edit: (([UInt8]) -> [UInt8])? = nil) async throws -> Fixture {
            let home = TempHome(), dir = TempDir()
            try simulate(home, days: 3)
            let node = try home.open()
            return Fixture(home: home, node: node, dir: dir, bundle: try await RawBundle(node, dir: dir.path, lines: edit))
        }

        /// The bundle's third line (an item) replaced by one that is not JSON, of the same length.
        static func badThirdLine() async throws -> Fixture {
            var edited = false
            return try await make { part in
                guard !edited else { return part }
                edited = true
                var lines = part.split(separator: 0x0A, omittingEmptySubsequences: false)
                lines[2] = ArraySlice(repeating: UInt8(ascii: "x"), count: lines[2].count)
                return Array(lines.joined(separator: [0x0A]))
            }
        }
    }

    @Test("a bundle of many parts is applied while it arrives, declared first or streamed (version 3): digests equal at every observation, and the replica and the kept bundles equal those of a server that applied each bundle once it was whole")
    func sameAsWhole() async throws {
        let a = TempHome()
        try simulate(a, days: 3)
        try simulate(a, days: 2)
        var kept: [[[UInt8]]] = []
        var states: [[ChainStateDigest.Result]] = []
        // (arrivingParts, the node's protocol version): a stream is applied while it arrives whatever arrivingParts says.
        for (arrivingParts, version) in [(2, SyncHello.currentVersion), (100_000, SyncHello.currentVersion), (100_000, SyncHello.streamVersion)] {
            let data = TempDir(), metrics = ServerMetrics()
            // Pieces of 1,000 bytes: lines cut across pieces as well as parts.
            try await withServer(data, metrics: metrics, arrivingParts: arrivingParts, arrivingPiece: 1000) { server in
                let e = try await server.enroll("a")
                let node = try a.open()
                var client = SyncClient(node: node, outbox: a.root + "/outbox-\(arrivingParts)-\(version)")
                client.version = version
                client.partSize = 16 << 10
                let r = try await client.sync(e)
                #expect(r.sent == 2)
                let pairs = try digests(node, server.store)
                #expect(pairs.count == 2)
                for (x, y) in pairs { #expect(x == y) }
                states.append(pairs.map(\.1))
                kept.append(try (1...2).map { seq in
                    try Array(Data(contentsOf: URL(fileURLWithPath: try #require(server.store.storedBundlePath(node.deviceChainHash, sequence: seq)))))
                })
                #expect(try await quarantineEmpties(server.store))
                // The node syncs on: nothing left to send.
                let again = try await client.sync(e)
                #expect(again.sent == 0 && again.serverHadSequence == 2)
            }
            let arrived = metricCount(metrics, "hp_server_arriving_applies_total", "ended=\"applied\"")
            let expected = arrivingParts == 2 || version == SyncHello.streamVersion ? 2 : 0
            #expect(arrived == expected, "bundles applied while they arrived, with arrivingParts \(arrivingParts), version \(version)")
        }
        #expect(states.count == 3 && states.allSatisfy { $0 == states[0] })
        #expect(kept.count == 3 && kept.allSatisfy { $0 == kept[0] } && kept[0].allSatisfy { !$0.isEmpty })
    }

    @Test("a connection that ends after every part but before BUNDLE_END (or a stream's BUNDLE_STREAM_END), while the bundle is applied as it arrives, stores nothing and binds no chain; the next sync completes",
          arguments: [false, true])
    func abandoned(streamed: Bool) async throws {
        let f = try await Fixture.make()
        let (a, node, bundle, metrics) = (f.home, f.node, f.bundle, ServerMetrics())
        #expect(bundle.parts.count > 4)
        try await withServer(TempDir(), metrics: metrics) { server in
            let e = try await server.enroll("a"), b = try await server.enroll("b")
            // Every part but no BUNDLE_END, then a PING: once its PONG came, the server has taken the parts; then the
            // connection closes. The apply has every line, trailer included: the missing end alone must keep it from committing.
            _ = try await Self.exchange(server, version: streamed ? SyncHello.streamVersion : SyncHello.currentVersion,
                                        first: [try authFrame(e), streamed ? bundle.streamBegin : bundle.begin] + bundle.parts + [SyncFrame(kind: .ping, payload: ByteBuffer())],
                                        untilPong: true, second: nil)
            #expect(try await quarantineEmpties(server.store))
            // The apply ended with the connection: counted once it has.
            let deadline = ContinuousClock.now + .seconds(30)
            while metricCount(metrics, "hp_server_arriving_applies_total", "ended=\"abandoned\"") == 0 && ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(20))
            }
            #expect(metricCount(metrics, "hp_server_arriving_applies_total", "ended=\"abandoned\"") == 1)
            #expect(try server.store.chains().isEmpty)
            // The chain is bound to no device: another may claim it (and lets go of it again).
            let registry = try server.store.registry()
            let other = try registry.authenticate(name: b.name, credential: b.credential)
            #expect(try registry.claim(other, chain: node.deviceChainHash, now: 0))
            try registry.release(other, chain: node.deviceChainHash)
            let r = try await SyncClient(node: node, outbox: a.root + "/outbox").sync(e)
            #expect(r.sent == 1)
            for (x, y) in try digests(node, server.store) { #expect(x == y) }
        }
    }

    @Test("a bundle whose third line does not decode is refused while it arrives with the error a whole one gets, and nothing is stored")
    func refusedWhileArriving() async throws {
        let f = try await Fixture.badThirdLine()
        let replies = try await Self.refusals([f.bundle.begin] + f.bundle.parts + [f.bundle.end])
        #expect(replies.allSatisfy { $0.contains("malformed") })
    }

    @Test("an apply that refuses a line stops at once, without waiting for the parts still to come: counted as refused, not stalled")
    func refusedStopsAtOnce() async throws {
        let f = try await Fixture.badThirdLine()
        let (bundle, metrics) = (f.bundle, ServerMetrics())
        // A part wait long enough for the refused line's batch to be decoded on a loaded machine
        // (4 s was not, once, beside the whole suite).
        try await withServer(TempDir(), metrics: metrics, arrivingPartWait: .seconds(10)) { server in
            let e = try await server.enroll("a")
            // Every part but the last (the refused line's batch of lines is full), then a pause longer than the part
            // wait: an apply still reading would stall.
            let last = bundle.parts.count - 1
            let reply = try await Self.exchange(server, first: [try authFrame(e), bundle.begin] + bundle.parts.prefix(last), untilPong: false,
                                                then: { try await Task.sleep(for: .seconds(11)) },
                                                second: Array(bundle.parts.dropFirst(last)) + [bundle.end], until: "bundle_invalid")
            #expect(reply.contains("bundle_invalid"))
            #expect(metricCount(metrics, "hp_server_arriving_applies_total", "ended=\"refused\"") == 1)
            #expect(metricCount(metrics, "hp_server_arriving_applies_total", "ended=\"stalled\"") == 0)
            #expect(try server.store.chains().isEmpty)
        }
    }

    @Test("a bundle announced with another manifest hash is refused while it arrives with the error a whole one gets, and nothing is stored")
    func wrongManifestHash() async throws {
        let f = try await Fixture.make()
        let bundle = f.bundle
        let other = String(repeating: "ab", count: 32)
        var begin = try JSONParser.parse(Array(bundle.begin.payload.readableBytesView)).object!
        begin["manifest_hash"] = .string(other)
        let wrongBegin = try SyncFrame.json(.bundleBegin, .object(begin))
        let end = try SyncFrame.json(.bundleEnd, .object(["sequence": .int(1), "manifest_hash": .string(other)]))
        let replies = try await Self.refusals([wrongBegin] + bundle.parts + [end])
        #expect(replies.allSatisfy { $0.contains("manifest_hash") })
    }

    @Test("a connection of a device that stalls and then ends leaves the chain bound, when another connection of the device synced it meanwhile")
    func stalledConnectionKeepsBinding() async throws {
        let f = try await Fixture.make()
        let (a, node, bundle, metrics) = (f.home, f.node, f.bundle, ServerMetrics())
        try await withServer(TempDir(), metrics: metrics, arrivingPartWait: .milliseconds(300)) { server in
            let e = try await server.enroll("a"), b = try await server.enroll("b")
            // Connection A: the bundle's parts, no end; it stays open (its apply stalls and gives the chain's turn back)
            // while connection B of the same device syncs the chain; then A ends.
            _ = try await Self.exchange(server, first: [try authFrame(e), bundle.begin] + bundle.parts + [SyncFrame(kind: .ping, payload: ByteBuffer())],
                                        untilPong: true, then: {
                                            let r = try await SyncClient(node: node, outbox: a.root + "/outbox").sync(e)
                                            #expect(r.sent == 1)
                                        }, second: nil)
            let deadline = ContinuousClock.now + .seconds(30)
            while metricCount(metrics, "hp_server_arriving_applies_total", "ended=\"abandoned\"") == 0 && ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(20))
            }
            #expect(metricCount(metrics, "hp_server_arriving_applies_total", "ended=\"abandoned\"") == 1)
            // The chain is still the device's: another device may not take it.
            let registry = try server.store.registry()
            let other = try registry.authenticate(name: b.name, credential: b.credential)
            #expect(throws: (any Error).self) { try registry.claim(other, chain: node.deviceChainHash, now: 0) }
            for (x, y) in try digests(node, server.store) { #expect(x == y) }
        }
    }

    @Test("an apply of an arriving bundle that never starts (the apply threads stopped) still stops its hand-off: the connection's next hand-over fails at once")
    func neverStartedApplyStopsHandOff() async throws {
        let data = TempDir()
        let store = ServerStore(root: data.path)
        try store.create()
        let queue = ApplyQueue(store: store, keptReplicas: 1, threads: 2)
        await queue.shutdown()
        let lines = ArrivingLines(depth: 1)
        let header = BundleHeader(deviceChainHash: String(repeating: "c", count: 64), sequence: 1, observationId: 1, previousManifestHash: nil)
        await #expect(throws: (any Error).self) {
            _ = try await queue.apply(chain: header.deviceChainHash, arriving: lines, header: header, path: data.file("none"),
                                      manifestHash: String(repeating: "a", count: 64), sequence: 1, bytes: 0, at: 0)
        }
        #expect(lines.stopped)
        #expect(throws: (any Error).self) { try lines.put([0x0A]) }
    }

    @Test("a device revoked while its bundle is applied as it arrives is refused at BUNDLE_END (unauthorized), and nothing is stored or bound")
    func revokedDuringUpload() async throws {
        let f = try await Fixture.make()
        let (node, bundle, metrics) = (f.node, f.bundle, ServerMetrics())
        try await withServer(TempDir(), metrics: metrics) { server in
            let e = try await server.enroll("a"), b = try await server.enroll("b")
            let reply = try await Self.exchange(server, first: [try authFrame(e), bundle.begin] + bundle.parts + [SyncFrame(kind: .ping, payload: ByteBuffer())],
                                                untilPong: true, then: { try server.store.registry().revoke(name: "a", now: Date().timeIntervalSince1970) },
                                                second: [bundle.end], until: "unauthorized")
            #expect(reply.contains("unauthorized"))
            #expect(metricCount(metrics, "hp_server_arriving_applies_total", "ended=\"refused\"") == 1)
            #expect(try await quarantineEmpties(server.store))
            #expect(try server.store.chains().isEmpty)
            let registry = try server.store.registry()
            let other = try registry.authenticate(name: b.name, credential: b.credential)
            #expect(try registry.claim(other, chain: node.deviceChainHash, now: 0))
        }
    }

    @Test("a first bundle refused after another connection's bundle of its chain was applied leaves the chain bound: a refusal undoes its binding only while the chain holds no bundle")
    func refusalKeepsAnAppliedChainBound() async throws {
        let f = try await Fixture.make()
        let chain = f.node.deviceChainHash
        // The same chain's seed with another first observation (a reinstalled app's): a divergent bundle at sequence 1.
        try f.home.home.reset(newChain: false)
        try simulate(f.home, days: 1, seed: 9)
        let reinstalled = try f.home.open()
        #expect(reinstalled.deviceChainHash == chain)
        let (lines, hash) = try bundleLines(reinstalled, 1, previous: nil)
        // Declared bundles are applied once whole; a stream while it arrives.
        try await withServer(TempDir(), arrivingParts: 100_000) { server in
            let e = try await server.enroll("a"), b = try await server.enroll("b")
            let registry = try server.store.registry()
            // Connection 1 streams its bundle and waits before its end, its apply holding the chain's turn,
            // until connection 2 has sent the divergent bundle whole: that binds the chain (unbound so far),
            // then waits for the turn. Connection 1's end is applied first; connection 2's bundle is refused.
            let replies = try await Self.streamWhileWholeWaits(server, e, f.bundle, chain: chain, whole: (lines, hash),
                                                               firstUntil: "\"sequence\"", secondUntil: "\"sequence\"") { _ in }
            #expect(replies[1]?.contains("\"applied\"") == true, "\(replies[1]?.suffix(200) ?? "")")
            #expect(replies[2]?.contains("divergence") == true, "\(replies[2]?.suffix(200) ?? "")")
            // Connection 1's bundle is the chain's, and the chain stays bound to its device: another cannot take it.
            #expect(try server.store.status(chain).0 == 1)
            #expect(try server.store.status(chain).1 != hash)
            #expect(try registry.chainFacts(chain).device == "a")
            let other = try registry.authenticate(name: b.name, credential: b.credential)
            #expect(throws: (any Error).self) { try registry.claim(other, chain: chain, now: 0) }
        }
    }

    @Test("a device revoked while its bundle waits for the chain's turn (after BUNDLE_END) is refused at the commit: unauthorized, nothing stored, the chain left unbound")
    func revokedWhileWaitingForTurn() async throws {
        let f = try await Fixture.make()
        let chain = f.node.deviceChainHash
        let (lines, hash) = try bundleLines(f.node, 1, previous: nil)
        try await withServer(TempDir(), arrivingParts: 100_000) { server in
            let e = try await server.enroll("a")
            let registry = try server.store.registry()
            // Connection 1 streams the bundle and waits before its end: its apply holds the chain's turn.
            // Connection 2 sends the same bundle whole: it is claimed (the device active), then waits for the turn.
            // The device is revoked; connection 1's end is refused, then connection 2's apply reaches its commit.
            let replies = try await Self.streamWhileWholeWaits(server, e, f.bundle, chain: chain, whole: (lines, hash),
                                                               firstUntil: "unauthorized", secondUntil: "\"code\"") { registry in
                try registry.revoke(name: "a", now: Date().timeIntervalSince1970)
            }
            #expect(replies[1]?.contains("unauthorized") == true, "\(replies[1]?.suffix(200) ?? "")")
            #expect(replies[2]?.contains("unauthorized") == true, "\(replies[2]?.suffix(200) ?? "")")
            #expect(replies[2]?.contains("\"status\"") == false, "\(replies[2]?.suffix(200) ?? "")")
            #expect(try await quarantineEmpties(server.store))
            #expect(try server.store.chains().isEmpty)
            #expect(try registry.chainFacts(chain).device == nil)
        }
    }

    @Test("a bundle of a chain another device holds is not applied while it arrives: refused at its end as forbidden, as before")
    func anotherDevicesChain() async throws {
        let f = try await Fixture.make()
        let (a, node, bundle, metrics) = (f.home, f.node, f.bundle, ServerMetrics())
        try await withServer(TempDir(), metrics: metrics) { server in
            let e = try await server.enroll("a"), b = try await server.enroll("b")
            // The owner's own sync declares its bundle first (a stream would be applied while it arrives).
            var client = SyncClient(node: node, outbox: a.root + "/outbox")
            client.version = SyncHello.currentVersion
            _ = try await client.sync(e)
            let reply = String(decoding: try await server.raw(try wire([try authFrame(b), bundle.begin] + bundle.parts + [bundle.end]), until: "forbidden"), as: UTF8.self)
            #expect(reply.contains("forbidden"))
            #expect(metricCount(metrics, "hp_server_arriving_applies_total", "ended=\"applied\"") == 0)
            #expect(metricCount(metrics, "hp_server_arriving_applies_total", "ended=\"refused\"") == 0)
            for (x, y) in try digests(node, server.store) { #expect(x == y) }
        }
    }

    /// Sends `first` over a new connection, reads until a PONG (with `untilPong`), runs
    /// `then`, sends `second`, and reads until the text `until` arrives; what arrived.
    /// Two connections of device `e` racing for `chain`'s turn: connection 1 streams `bundle` but
    /// for its end, so that its apply holds the turn; then connection 2 sends `whole` (lines and
    /// manifest hash) declared, which claims the chain and waits for the turn. Once the chain is
    /// bound, `meanwhile` runs and connection 1 sends its end. Their replies, read until
    /// `firstUntil` and `secondUntil`, keyed 1 and 2.
    static func streamWhileWholeWaits(_ server: TestServer, _ e: NodeEnrollment, _ bundle: RawBundle, chain: String,
                                      whole: ([[UInt8]], String), firstUntil: String, secondUntil: String,
                                      meanwhile: @escaping @Sendable (DeviceRegistry) throws -> Void) async throws -> [Int: String] {
        let (started, starting) = AsyncStream.makeStream(of: Void.self)
        let streamed = [try authFrame(e), bundle.streamBegin] + bundle.parts + [SyncFrame(kind: .ping, payload: ByteBuffer())]
        let end = [bundle.streamEnd]
        let declared = try wire([try authFrame(e)] + ChainBindingTests.bundleFrames(whole.0, hash: whole.1))
        let store = server.store
        return try await withThrowingTaskGroup(of: (Int, String).self) { group in
            group.addTask {
                (1, try await exchange(server, version: SyncHello.streamVersion, first: streamed, untilPong: true, then: {
                    starting.yield()
                    let registry = try store.registry(), deadline = ContinuousClock.now + .seconds(30)
                    while try registry.chainFacts(chain).device == nil && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
                    try #require(try registry.chainFacts(chain).device == e.name, "connection 2 claimed the chain before connection 1 ends")
                    try meanwhile(registry)
                }, second: end, until: firstUntil))
            }
            var it = started.makeAsyncIterator()
            await it.next()
            group.addTask { (2, String(decoding: try await server.raw(declared, until: secondUntil), as: UTF8.self)) }
            var replies: [Int: String] = [:]
            for try await (k, reply) in group { replies[k] = reply }
            return replies
        }
    }

    static func exchange(_ server: TestServer, version: UInt16 = SyncHello.currentVersion, first: [SyncFrame], untilPong: Bool, then: () async throws -> Void = {},
                         second: [SyncFrame]?, until: String = "") async throws -> String {
        var pong = ByteBuffer()
        try SyncFrameEncoder().encode(data: SyncFrame(kind: .pong, payload: ByteBuffer()), out: &pong)
        let channel = try await server.tlsChannel()
        return try await channel.executeThenClose { inbound, outbound in
            var out: [UInt8] = []
            var it = inbound.makeAsyncIterator()
            try await outbound.write(ByteBuffer(bytes: try wire(version: version, first)))
            while untilPong, let chunk = try await it.next() {
                out += Array(chunk.readableBytesView)
                if out.count >= pong.readableBytes, Array(out.suffix(pong.readableBytes)) == Array(pong.readableBytesView) { break }
            }
            try await then()
            guard let second else { return String(decoding: out, as: UTF8.self) }
            try await outbound.write(ByteBuffer(bytes: try wire(hello: false, second)))
            while let chunk = try await it.next() {
                out += Array(chunk.readableBytesView)
                if String(decoding: out, as: UTF8.self).contains(until) { break }
            }
            return String(decoding: out, as: UTF8.self)
        }
    }

    /// The refusals of `frames` (after AUTH) by a server that applies the bundle while it
    /// arrives and by one that applies it once whole: equal, from `bundle_invalid` on, and
    /// nothing stored by either; the first counts one apply refused while it arrived.
    static func refusals(_ frames: [SyncFrame]) async throws -> [String] {
        var replies: [String] = []
        for arrivingParts in [2, 100_000] {
            let metrics = ServerMetrics()
            try await withServer(TempDir(), metrics: metrics, arrivingParts: arrivingParts) { server in
                let e = try await server.enroll("a")
                let reply = String(decoding: try await server.raw(try wire([try authFrame(e)] + frames), until: "bundle_invalid"), as: UTF8.self)
                let from = try #require(reply.range(of: "bundle_invalid"), "arrivingParts \(arrivingParts): \(reply.suffix(200))")
                replies.append(String(reply[from.lowerBound...].prefix(160)))
                #expect(try await quarantineEmpties(server.store))
                #expect(try server.store.chains().isEmpty)
            }
            #expect(metricCount(metrics, "hp_server_arriving_applies_total", "ended=\"refused\"") == (arrivingParts == 2 ? 1 : 0))
        }
        #expect(replies.count == 2 && replies[0] == replies[1])
        return replies
    }

    @Test("a bundle whose parts stop coming for longer than the part wait, or that takes longer than its size at the minimum rate, is applied from its file once BUNDLE_END comes: acknowledged, digests equal",
          arguments: [(Duration.milliseconds(300), Duration.seconds(60)), (Duration.seconds(30), Duration.milliseconds(300))])
    func stalledThenWhole(partWait: Duration, grace: Duration) async throws {
        let f = try await Fixture.make()
        let (node, bundle, metrics) = (f.node, f.bundle, ServerMetrics())
        try await withServer(TempDir(), metrics: metrics, arrivingPartWait: partWait, arrivingMinimumRate: 1e15, arrivingGrace: grace) { server in
            let e = try await server.enroll("a")
            let reply = try await Self.exchange(server, first: [try authFrame(e), bundle.begin] + bundle.parts.prefix(2), untilPong: false,
                                                then: { try await Task.sleep(for: .seconds(1)) },
                                                second: Array(bundle.parts.dropFirst(2)) + [bundle.end], until: "\"status\"")
            #expect(reply.contains("\"status\":\"applied\""))
            #expect(metricCount(metrics, "hp_server_arriving_applies_total", "ended=\"stalled\"") == 1)
            let pairs = try digests(node, server.store)
            #expect(pairs.count == 1)
            for (x, y) in pairs { #expect(x == y) }
        }
    }
}
