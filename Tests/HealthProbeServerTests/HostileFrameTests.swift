import Foundation
import NIOCore
import Testing
@testable import HealthProbeArchive
import HealthProbeCanonical
@testable import HealthProbeSimulator
@testable import HealthProbeServer
import HealthProbeProtocol
import HealthProbeNode
import HealthProbeTestSupport

/// Frames from an enrolled device whose hashes could be right but whose numbers are not:
/// refused by name, nothing stored, and the server (this very process) keeps serving.
@Suite("Hostile frames from an enrolled device")
struct HostileFrameTests {
    static let hash = String(repeating: "a", count: 64)

    /// Part 0 of a bundle: `body`, compressed, as a BUNDLE_PART frame.
    static func onlyPart(_ body: [UInt8]) throws -> SyncFrame {
        var part = ByteBuffer()
        part.writeInteger(UInt32(0), endianness: .big)
        part.writeInteger(UInt32(body.count), endianness: .big)
        part.writeBytes(try BundlePartCodec.compress(body))
        return SyncFrame(kind: .bundlePart, payload: part)
    }

    /// A BUNDLE_BEGIN payload with `sequence` written as `literal` (canonical JSON otherwise).
    static func begin(sequence literal: String, itemCount: Int = 3, size: Int = 20) -> SyncFrame {
        let text = "{\"item_count\":\(itemCount),\"manifest_hash\":\"\(hash)\",\"parts\":1,\"sequence\":\(literal),\"uncompressed_size\":\(size)}"
        return SyncFrame(kind: .bundleBegin, payload: ByteBuffer(string: text))
    }

    @Test("huge, fractional and negative sequences get malformed_frame naming the member; then a real sync completes",
          arguments: ["9223372036854776000", "1e+300", "1.5", "-1", "0"])
    func numbers(_ literal: String) async throws {
        let data = TempDir()
        let a = TempHome()
        try simulate(a, days: 1)
        try await withServer(data) { server in
            let e = try await server.enroll("a")
            let reply = try await server.raw(try wire([try authFrame(e), Self.begin(sequence: literal)]), until: "malformed_frame")
            let text = String(decoding: reply, as: UTF8.self)
            #expect(text.contains("malformed_frame") && text.contains("BUNDLE_BEGIN.sequence"), "\(literal): \(text)")
            #expect(try server.store.chains().isEmpty)
            // The server is still there, and a real client syncs.
            let r = try await SyncClient(node: try a.open(), outbox: a.root + "/outbox").sync(e)
            #expect(r.sent == 1)
        }
    }

    @Test("BUNDLE_END with a huge sequence is refused the same way")
    func endSequence() async throws {
        let data = TempDir()
        try await withServer(data) { server in
            let e = try await server.enroll("a")
            let body = Array("{}\n{}\n{}\n".utf8)
            let part = try Self.onlyPart(body)
            let end = SyncFrame(kind: .bundleEnd, payload: ByteBuffer(string: "{\"manifest_hash\":\"\(Self.hash)\",\"sequence\":1e+300}"))
            let reply = try await server.raw(try wire([try authFrame(e), Self.begin(sequence: "1", size: body.count),
                                                       part, end]), until: "malformed_frame")
            #expect(String(decoding: reply, as: UTF8.self).contains("BUNDLE_END.sequence"))
            #expect(try server.store.chains().isEmpty)
        }
    }

    @Test("item_count is checked: a bundle with other than the declared number of lines is refused before it is verified")
    func itemCount() async throws {
        let data = TempDir()
        try await withServer(data) { server in
            let e = try await server.enroll("a")
            let body = Array("{}\n{}\n{}\n".utf8)  // three lines: one item
            let part = try Self.onlyPart(body)
            let end = try SyncFrame.json(.bundleEnd, .object(["manifest_hash": .string(Self.hash), "sequence": .int(1)]))
            let reply = try await server.raw(try wire([try authFrame(e), Self.begin(sequence: "1", itemCount: 5, size: body.count),
                                                       part, end]), until: "malformed_frame")
            let text = String(decoding: reply, as: UTF8.self)
            #expect(text.contains("declared 5 items") && text.contains("holds 1"), "\(text)")
            #expect(try server.store.chains().isEmpty)
        }
    }

    @Test("a hello with flags, and a PING with a payload, are malformed_frame over real TLS")
    func helloFlagsAndPingPayload() async throws {
        let data = TempDir()
        try await withServer(data) { server in
            var hello = ByteBuffer()
            SyncHello(flags: 0x0001).write(to: &hello)
            var reply = try await server.raw(Array(hello.readableBytesView), until: "malformed_frame")
            #expect(String(decoding: reply, as: UTF8.self).contains("flags must be 0"))
            let e = try await server.enroll("a")
            reply = try await server.raw(try wire([try authFrame(e), SyncFrame(kind: .ping, payload: ByteBuffer(bytes: [1]))]), until: "malformed_frame")
            #expect(String(decoding: reply, as: UTF8.self).contains("PING: the payload must be empty"))
        }
    }

    @Test("a transfer refused mid-bundle (a part out of order) leaves nothing in quarantine")
    func refusedTransferLeavesNoFile() async throws {
        let data = TempDir()
        try await withServer(data) { server in
            let e = try await server.enroll("a")
            let body = Array("{}\n{}\n{}\n".utf8)
            var second = ByteBuffer()
            second.writeInteger(UInt32(5), endianness: .big)
            second.writeInteger(UInt32(1), endianness: .big)
            let begin = SyncFrame(kind: .bundleBegin, payload: ByteBuffer(string:
                "{\"item_count\":1,\"manifest_hash\":\"\(Self.hash)\",\"parts\":2,\"sequence\":1,\"uncompressed_size\":\(body.count + 1)}"))
            let reply = try await server.raw(try wire([try authFrame(e), begin, try Self.onlyPart(body), SyncFrame(kind: .bundlePart, payload: second)]),
                                             until: "malformed_frame")
            #expect(String(decoding: reply, as: UTF8.self).contains("expected part 1 of 2"))
            #expect(try await quarantineEmpties(server.store, within: .seconds(5)))
        }
    }

    @Test("a client time of year 9999, or one whose offset names an instant before year 0000 or after 9999, is refused, not stored as a clock offset; the server serves on",
          arguments: ["9999-12-31T23:59:59.000Z", "0000-01-01T00:00:00+0100", "9999-12-31T23:59:59-0100"])
    func farClientTime(_ time: String) async throws {
        let data = TempDir()
        try await withServer(data) { server in
            let e = try await server.enroll("a")
            let auth = try SyncFrame.json(.auth, .object(["device_name": .string(e.name), "credential": .string(e.credential),
                                                          "client_time": .string(time)]))
            let reply = try await server.raw(try wire([auth]), until: "malformed_frame")
            #expect(String(decoding: reply, as: UTF8.self).contains("AUTH.client_time"))
            // A second connection is served: the first did not stop the server.
            let fine = try SyncFrame.json(.auth, .object(["device_name": .string(e.name), "credential": .string(e.credential),
                                                          "client_time": .string(CanonicalDate.string(Date().timeIntervalSince1970))]))
            let ok = try await server.raw(try wire([fine]), until: "server_time")
            #expect(String(decoding: ok, as: UTF8.self).contains("server_time"))
        }
    }
}

@Suite("Chains are bound only by accepted bundles")
struct ChainBindingTests {
    @Test("a refused bundle naming an unknown chain does not bind it: its real owner then syncs")
    func refusedDoesNotBind() async throws {
        let data = TempDir()
        let b = TempHome()
        try simulate(b, days: 1)
        let chainB = try b.open().deviceChainHash
        try await withServer(data) { server in
            let a = try await server.enroll("a")
            let eb = try await server.enroll("b")
            // Device a sends a "bundle" whose header names b's chain; the rest is not a bundle.
            let body = Array(("{\"device_chain_hash\":\"\(chainB)\"}\n{}\n{}\n").utf8)
            let part = try HostileFrameTests.onlyPart(body)
            let end = try SyncFrame.json(.bundleEnd, .object(["manifest_hash": .string(HostileFrameTests.hash), "sequence": .int(1)]))
            let reply = try await server.raw(try wire([try authFrame(a), HostileFrameTests.begin(sequence: "1", itemCount: 1, size: body.count),
                                                       part, end]), until: "\"sequence\"")
            #expect(String(decoding: reply, as: UTF8.self).contains("bundle_invalid"), "\(String(decoding: reply, as: UTF8.self))")
            #expect(try server.store.registry().chainInfo(chainB).device == nil)
            // b, the chain's real owner, is not forbidden.
            let r = try await SyncClient(node: try b.open(), outbox: b.root + "/outbox").sync(eb)
            #expect(r.sent == 1)
            #expect(try server.store.registry().chainInfo(chainB).device == "b")
        }
    }

    /// The frames that send `lines` (a whole bundle) as sequence 1 in one part.
    static func bundleFrames(_ lines: [[UInt8]], hash: String) throws -> [SyncFrame] {
        let body: [UInt8] = lines.flatMap { $0 + [UInt8(0x0A)] }
        return [
            try SyncFrame.json(.bundleBegin, .object(["sequence": .int(1), "manifest_hash": .string(hash), "parts": .int(1),
                                                      "item_count": .int(lines.count - 2), "uncompressed_size": .int(body.count)])),
            try HostileFrameTests.onlyPart(body),
            try SyncFrame.json(.bundleEnd, .object(["manifest_hash": .string(hash), "sequence": .int(1)])),
        ]
    }

    @Test("bundles with valid hashes but invalid content are bundle_invalid naming what is wrong; nothing is stored; the real bundle then syncs and the replica passes --full")
    func invalidMeaning() async throws {
        let data = TempDir()
        let a = TempHome()
        try simulate(a, days: 2)
        let (lines, _) = try bundleLines(try a.open(), 1, previous: nil)
        var changedOne = false
        let unknownKind = try editedBundle(lines) { _, o in
            guard !changedOne, o["kind"] == .string("event") else { return [o] }
            changedOne = true
            var o = o
            o["event_kind"] = .string("vanished")
            return [o]
        }
        guard case .object(var header) = try JSONParser.parse(lines[0]) else { Issue.record("no header"); return }
        header["sequence"] = .number(9_223_372_036_854_775_808)
        let hugeSequence = try rebundle(header: try CanonicalJSON.encode(.object(header)), items: Array(lines.dropFirst().dropLast()))
        let noObservation = try editedBundle(lines) { _, o in o["kind"] == .string("observation") ? [] : [o] }
        try await withServer(data) { server in
            let e = try await server.enroll("a")
            for (bundle, expected) in [(unknownKind, "event.event_kind"), (hugeSequence, "header: sequence"), (noObservation, "first item must be the observation")] {
                let reply = try await server.raw(try wire([try authFrame(e)] + Self.bundleFrames(bundle.0, hash: bundle.1)), until: "\"sequence\"")
                let text = String(decoding: reply, as: UTF8.self)
                #expect(text.contains("bundle_invalid") && text.contains(expected), "\(expected): \(text)")
                #expect(try server.store.chains().isEmpty, "\(expected)")
            }
            let r = try await SyncClient(node: try a.open(), outbox: a.root + "/outbox").sync(e)
            #expect(r.sent == 1)
            let chain = try #require(try server.store.chains().first)
            let replica = try Archive.open(path: server.store.replicaPath(chain), mode: .readOnly)
            #expect(try ArchiveVerifier.databaseChecks(replica, mode: .full).filter { $0.status == .problem }.isEmpty)
        }
    }

    /// The frames that send `lines` (a whole bundle) in one part, announced as `sequence`.
    static func bundleFrames(_ lines: [[UInt8]], hash: String, announcing sequence: Int) throws -> [SyncFrame] {
        let body: [UInt8] = lines.flatMap { $0 + [UInt8(0x0A)] }
        return [
            try SyncFrame.json(.bundleBegin, .object(["sequence": .int(sequence), "manifest_hash": .string(hash), "parts": .int(1),
                                                      "item_count": .int(lines.count - 2), "uncompressed_size": .int(body.count)])),
            try HostileFrameTests.onlyPart(body),
            try SyncFrame.json(.bundleEnd, .object(["manifest_hash": .string(hash), "sequence": .int(sequence)])),
        ]
    }

    @Test("a bundle whose header names another sequence than its BUNDLE_BEGIN is refused; nothing is stored")
    func headerSequenceIsAnnounced() async throws {
        let data = TempDir()
        let a = TempHome()
        try simulate(a, days: 1)
        let (lines, hash) = try bundleLines(try a.open(), 1, previous: nil)
        try await withServer(data) { server in
            let e = try await server.enroll("a")
            let reply = try await server.raw(try wire([try authFrame(e)] + Self.bundleFrames(lines, hash: hash, announcing: 2)), until: "\"sequence\"")
            let text = String(decoding: reply, as: UTF8.self)
            #expect(text.contains("bundle_invalid") && text.contains("is not 2, the sequence the bundle came as (its BUNDLE_BEGIN's"), "\(text)")
            #expect(try server.store.chains().isEmpty)
        }
    }

    @Test("a PING or the next BUNDLE_BEGIN sent before the bundle's ack is unexpected_message, after the ack of what was applied",
          arguments: ["ping", "begin"])
    func framesBeforeTheAck(_ early: String) async throws {
        let data = TempDir()
        let a = TempHome()
        try simulate(a, days: 1)
        let (lines, hash) = try bundleLines(try a.open(), 1, previous: nil)
        try await withServer(data) { server in
            let e = try await server.enroll("a")
            let next = early == "ping" ? SyncFrame(kind: .ping, payload: ByteBuffer())
                : try SyncFrame.json(.bundleBegin, .object(["sequence": .int(2), "manifest_hash": .string(hash), "parts": .int(1),
                                                            "item_count": .int(1), "uncompressed_size": .int(10)]))
            // One write: the frame after BUNDLE_END arrives while the bundle is applied.
            let reply = try await server.raw(try wire([try authFrame(e)] + Self.bundleFrames(lines, hash: hash) + [next]), until: "unexpected_message")
            let text = String(decoding: reply, as: UTF8.self)
            #expect(text.contains("\"applied\""), "the bundle was applied and acknowledged: \(text)")
            #expect(text.contains("unexpected_message") && text.contains("before the reply"), "\(text)")
            #expect(try server.store.status(try #require(try server.store.chains().first)).0 == 1)
        }
    }

    @Test("a second hello is unexpected_message; a frame too large before AUTH is unauthorized")
    func secondHelloAndLargeFrameBeforeAuth() async throws {
        let data = TempDir()
        try await withServer(data) { server in
            let e = try await server.enroll("a")
            var hello = ByteBuffer()
            SyncHello().write(to: &hello)
            var reply = try await server.raw(try wire([try authFrame(e)]) + Array(hello.readableBytesView), until: "unexpected_message")
            #expect(String(decoding: reply, as: UTF8.self).contains("a second hello"))
            reply = try await server.raw(try wire([]) + [0x7F, 0xFF, 0xFF, 0xFF, 0x10], until: "unauthorized")
            let text = String(decoding: reply, as: UTF8.self)
            #expect(text.contains("unauthorized") && !text.contains("frame_too_large"), "\(text)")
        }
    }
}
