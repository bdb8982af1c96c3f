import Foundation
import NIOCore
import Testing
@testable import HealthProbeArchive
@testable import HealthProbeServer
import HealthProbeProtocol
import HealthProbeCanonical
@testable import HealthProbeNode
import HealthProbeTestSupport

@Suite("Streamed bundles (protocol version 3)")
struct StreamedSyncTests {
    // A streamed first sync against a declared one: ArrivingApplyTests.sameAsWhole.

    @Test("a node syncing with a server that speaks only versions 1 and 2 connects again with version 1 and syncs")
    func fallsBack() async throws {
        let a = TempHome()
        try simulate(a, days: 2)
        try await withServer(TempDir(), versions: 1...2) { server in
            let e = try await server.enroll("a")
            let node = try a.open()
            let r = try await SyncClient(node: node, outbox: a.root + "/outbox").sync(e)
            #expect(r.sent == 1)
            for (x, y) in try digests(node, server.store) { #expect(x == y) }
            // The hello a node of version 3 sends is refused by that server, as an earlier build refuses it.
            let reply = try await server.raw(try wire(version: SyncHello.streamVersion, []))
            #expect(String(decoding: reply, as: UTF8.self).contains("protocol_version"))
        }
    }

    @Test("a node whose build leaves the server without a frame for longer than its idle timeout keeps the connection with PING and syncs; without them the server times the stream out and keeps nothing")
    func keepalive() async throws {
        let a = TempHome(), b = TempHome()
        try simulate(a, days: 2)
        try simulate(b, days: 2, seed: 3)
        // Margins for a machine loaded with the suite, the fuzzers and the browser tests, all
        // sharing the event loops that time the connection out and send the PINGs.
        try await withServer(TempDir(), idle: .seconds(12)) { server in
            let e = try await server.enroll("a")
            let node = try a.open()
            var client = SyncClient(node: node, outbox: a.root + "/outbox")
            client.partSize = 64 * 1024
            // The build stops for 26 s after its first part: more than twice the server's idle timeout.
            client.onPartBuilt = { part in if part.offset == 0 { Thread.sleep(forTimeInterval: 26) } }
            let refused = await #expect(throws: SyncProtocolError.self) { _ = try await client.sync(e) }
            #expect(refused?.code == .timeout, "\(String(describing: refused))")
            #expect(try await quarantineEmpties(server.store))
            #expect(try server.store.chains().isEmpty)

            // Every step of the session keeps it open: between a stream's parts, and (version 1)
            // while a bundle is built whole before BUNDLE_BEGIN declares it.
            client.keepalive = .milliseconds(300)
            let r = try await client.sync(e)
            #expect(r.sent == 1)
            #expect(r.keepalivePings >= 10, "\(r.keepalivePings) PINGs in 26 s")
            for (x, y) in try digests(node, server.store) { #expect(x == y) }
            let other = try await server.enroll("b")
            let again = try b.open()
            var declaring = SyncClient(node: again, outbox: b.root + "/outbox")
            declaring.version = SyncHello.currentVersion
            declaring.keepalive = .milliseconds(300)
            declaring.onPartBuilt = { part in if part.offset == 0 { Thread.sleep(forTimeInterval: 26) } }
            let whole = try await declaring.sync(other)
            #expect(whole.sent == 1)
            #expect(whole.keepalivePings >= 10, "\(whole.keepalivePings) PINGs in 26 s")
            for (x, y) in try digests(again, server.store) { #expect(x == y) }
        }
    }

    @Test("a stream whose end declares another sequence, part count, size or item count is refused as malformed_frame; another manifest hash as bundle_invalid; nothing is stored")
    func endMustMatch() async throws {
        let f = try await ArrivingApplyTests.Fixture.make()
        let bundle = f.bundle
        var declared = try JSONParser.parse(Array(bundle.streamEnd.payload.readableBytesView)).object!
        func plusOne(_ member: String) -> JSONValue {
            guard case .number(let n)? = declared[member] else { return .null }
            return .number(n + 1)
        }
        let changes: [(String, JSONValue, String)] = [
            ("sequence", .int(2), "malformed_frame"),
            ("parts", .int(bundle.parts.count + 1), "malformed_frame"),
            ("uncompressed_size", plusOne("uncompressed_size"), "malformed_frame"),
            ("item_count", plusOne("item_count"), "malformed_frame"),
            ("manifest_hash", .string(String(repeating: "ab", count: 32)), "bundle_invalid"),
        ]
        for (member, value, code) in changes {
            let original = declared[member]
            declared[member] = value
            let end = try SyncFrame.json(.bundleStreamEnd, .object(declared))
            declared[member] = original
            let metrics = ServerMetrics()
            try await withServer(TempDir(), metrics: metrics) { server in
                let e = try await server.enroll("a")
                let frames = [try authFrame(e), bundle.streamBegin] + bundle.parts + [end]
                let reply = String(decoding: try await server.raw(try wire(version: SyncHello.streamVersion, frames), until: code), as: UTF8.self)
                #expect(reply.contains(code), "\(member): \(reply.suffix(200))")
                if member == "manifest_hash" {
                    // Found by the apply that ran while the stream arrived, which then did not commit.
                    #expect(reply.contains("manifest_hash"), "\(reply.suffix(200))")
                    #expect(metricCount(metrics, "hp_server_arriving_applies_total", "ended=\"refused\"") == 1)
                }
                #expect(try await quarantineEmpties(server.store), "\(member)")
                #expect(try server.store.chains().isEmpty, "\(member)")
                // The node's own sync completes after it.
                let r = try await SyncClient(node: f.node, outbox: f.home.root + "/outbox").sync(e)
                #expect(r.sent == 1)
                for (x, y) in try digests(f.node, server.store) { #expect(x == y) }
            }
        }
    }

    @Test("a stream whose parts stop coming for longer than the part wait is applied from its file once BUNDLE_STREAM_END declares it: acknowledged, digests equal")
    func stalledThenWhole() async throws {
        let f = try await ArrivingApplyTests.Fixture.make()
        let (bundle, metrics) = (f.bundle, ServerMetrics())
        try await withServer(TempDir(), metrics: metrics, arrivingPartWait: .milliseconds(300)) { server in
            let e = try await server.enroll("a")
            let reply = try await ArrivingApplyTests.exchange(server, version: SyncHello.streamVersion,
                                                              first: [try authFrame(e), bundle.streamBegin] + bundle.parts.prefix(2), untilPong: false,
                                                              then: { try await Task.sleep(for: .seconds(1)) },
                                                              second: Array(bundle.parts.dropFirst(2)) + [bundle.streamEnd], until: "\"status\"")
            #expect(reply.contains("\"status\":\"applied\""))
            #expect(metricCount(metrics, "hp_server_arriving_applies_total", "ended=\"stalled\"") == 1)
            let pairs = try digests(f.node, server.store)
            #expect(pairs.count == 1)
            for (x, y) in pairs { #expect(x == y) }
            #expect(try await quarantineEmpties(server.store))
        }
    }

    @Test("two connections stream the same bundle at once: the second one's apply finds its sequence taken by the first, and its file is applied with the hash its end declares: already_applied, counted as taken, nothing changed")
    func takenMeanwhile() async throws {
        let f = try await ArrivingApplyTests.Fixture.make()
        // Few parts: the second connection's apply, waiting for the turn, holds them all meanwhile.
        let dir = TempDir()
        let bundle = try await RawBundle(f.node, dir: dir.path, partSize: 1 << 20), metrics = ServerMetrics()
        #expect(bundle.parts.count <= 4)
        try await withServer(TempDir(), metrics: metrics) { server in
            let e = try await server.enroll("a")
            let frames = [try authFrame(e), bundle.streamBegin] + bundle.parts + [SyncFrame(kind: .ping, payload: ByteBuffer())]
            let end = [bundle.streamEnd]
            // The first connection's apply holds the chain's turn (every part in, the end not sent) while the
            // second's parts arrive and its apply waits for the turn; then the first ends, then the second.
            let (firstIn, firstInNow) = AsyncStream.makeStream(of: Void.self)
            let (secondIn, secondInNow) = AsyncStream.makeStream(of: Void.self)
            let (firstDone, firstDoneNow) = AsyncStream.makeStream(of: Void.self)
            let replies = try await withThrowingTaskGroup(of: (Int, String).self) { group in
                group.addTask {
                    (1, try await ArrivingApplyTests.exchange(server, version: SyncHello.streamVersion, first: frames, untilPong: true, then: {
                        firstInNow.yield()
                        var it = secondIn.makeAsyncIterator()
                        await it.next()
                    }, second: end, until: "\"status\""))
                }
                var it = firstIn.makeAsyncIterator()
                await it.next()
                group.addTask {
                    (2, try await ArrivingApplyTests.exchange(server, version: SyncHello.streamVersion, first: frames, untilPong: true, then: {
                        secondInNow.yield()
                        var it = firstDone.makeAsyncIterator()
                        await it.next()
                    }, second: end, until: "\"status\""))
                }
                var replies: [Int: String] = [:]
                for try await (k, reply) in group {
                    replies[k] = reply
                    if k == 1 { firstDoneNow.yield() }
                }
                return replies
            }
            #expect(replies[1]?.contains("\"status\":\"applied\"") == true, "\(replies[1]?.suffix(200) ?? "")")
            #expect(replies[2]?.contains("\"status\":\"already_applied\"") == true, "\(replies[2]?.suffix(200) ?? "")")
            #expect(metricCount(metrics, "hp_server_arriving_applies_total", "ended=\"applied\"") == 1)
            #expect(metricCount(metrics, "hp_server_arriving_applies_total", "ended=\"taken\"") == 1)
            let pairs = try digests(f.node, server.store)
            #expect(pairs.count == 1)
            for (x, y) in pairs { #expect(x == y) }
            #expect(try server.store.status(f.node.deviceChainHash).0 == 1)
            #expect(try await quarantineEmpties(server.store))
        }
    }

    @Test("a stream sent again at a sequence the chain holds is acknowledged as already_applied, from its file, and changes nothing")
    func sentAgain() async throws {
        let f = try await ArrivingApplyTests.Fixture.make()
        let bundle = f.bundle
        let metrics = ServerMetrics()
        try await withServer(TempDir(), metrics: metrics) { server in
            let e = try await server.enroll("a")
            let frames = [try authFrame(e), bundle.streamBegin] + bundle.parts + [bundle.streamEnd]
            let first = String(decoding: try await server.raw(try wire(version: SyncHello.streamVersion, frames), until: "\"status\""), as: UTF8.self)
            #expect(first.contains("\"status\":\"applied\""))
            let before = try digests(f.node, server.store)
            let again = String(decoding: try await server.raw(try wire(version: SyncHello.streamVersion, frames), until: "\"status\""), as: UTF8.self)
            #expect(again.contains("\"status\":\"already_applied\""))
            #expect(metricCount(metrics, "hp_server_arriving_applies_total", "ended=\"applied\"") == 1, "the second is not applied while it arrives")
            let after = try digests(f.node, server.store)
            #expect(before.map(\.1) == after.map(\.1))
            #expect(try await quarantineEmpties(server.store))
        }
    }
}
