import Foundation
import HealthProbeCanonical
import HealthProbeProtocol
import HealthProbeTestSupport
import NIOCore
import Testing
@testable import HealthProbeServer

@Suite("Server session state machine")
struct ServerSessionStateMachineTests {
    typealias Machine = ServerSessionStateMachine
    static let hash = String(repeating: "ab", count: 32)
    static let session = Machine.Session(identity: DeviceRegistry.Identity(id: 7, name: "phone"), clockOffset: 1.5)

    func empty(_ kind: SyncFrame.Kind) -> SyncInbound { .frame(SyncFrame(kind: kind, payload: ByteBuffer())) }
    func json(_ kind: SyncFrame.Kind, _ members: [String: JSONValue]) -> SyncInbound {
        .frame(try! .json(kind, .object(members)))
    }
    var auth: SyncInbound {
        json(.auth, ["device_name": .string("phone"), "credential": .string(Self.hash), "client_time": .string("2026-01-01T00:00:00.000Z")])
    }
    func begin(sequence: Int = 1, parts: Int = 2, items: Int = 1, size: Int = 30) -> SyncInbound {
        json(.bundleBegin, ["sequence": .int(sequence), "manifest_hash": .string(Self.hash), "parts": .int(parts),
                            "item_count": .int(items), "uncompressed_size": .int(size)])
    }
    func part(_ index: UInt32, size: UInt32 = 15) -> SyncInbound {
        var b = ByteBuffer()
        b.writeInteger(index, endianness: .big)
        b.writeInteger(size, endianness: .big)
        b.writeBytes([0x78, 0x9C])
        return .frame(SyncFrame(kind: .bundlePart, payload: b))
    }
    func end(sequence: Int = 1) -> SyncInbound {
        json(.bundleEnd, ["sequence": .int(sequence), "manifest_hash": .string(Self.hash)])
    }
    func failCode(_ a: Machine.Action) -> SyncProtocolError.Code? {
        if case .fail(let e) = a { return e.code }
        return nil
    }
    func isClosed(_ m: Machine) -> Bool { if case .closed = m.state { return true }; return false }

    /// A machine past hello and authentication.
    func ready() -> Machine {
        var m = Machine()
        _ = m.received(.hello(SyncHello()))
        _ = m.received(auth)
        m.authenticated(Self.session)
        return m
    }

    /// A ready machine with a bundle open (its quarantine file in `dir`).
    func receiving(_ dir: TempDir, begin b: SyncInbound? = nil) throws -> Machine {
        var m = ready()
        guard case .openBundle = m.received(b ?? begin()) else { Issue.record("expected openBundle"); return m }
        m.bundleOpened(try QuarantineFile(directory: dir.path))
        return m
    }

    @Test("a whole session: the states carry the session and the transfer; the actions carry typed messages")
    func happyPath() throws {
        let dir = try TempDir()
        var m = Machine()
        guard case .sendHello = m.received(.hello(SyncHello())) else { Issue.record("expected sendHello"); return }
        guard case .authenticate(.auth(let a)) = m.received(auth) else { Issue.record("expected authenticate"); return }
        #expect(a.deviceName == "phone" && a.clientTime == 1_767_225_600)
        guard case .authenticating = m.state else { Issue.record("expected authenticating"); return }
        m.authenticated(Self.session)
        guard case .ready(let s) = m.state, s == Self.session else { Issue.record("the session is held"); return }
        guard case .chainStatus(let cs, let r) = m.received(json(.chainStatusRequest, ["device_chain_hash": .string(Self.hash)])),
              cs == Self.session, r.deviceChainHash == Self.hash else { Issue.record("expected chainStatus"); return }
        for sequence in 1...2 {
            guard case .openBundle(_, .begin(let b)) = m.received(begin(sequence: sequence)), b.sequence == sequence else { Issue.record("expected openBundle"); return }
            if case .fail(let e) = m.received(empty(.ping)) { #expect(e.code == .unexpectedMessage, "nothing before the file is open") }
            m = try receiving(dir, begin: begin(sequence: sequence))
            for i in 0..<2 {
                guard case .writePart(_, let p) = m.received(part(UInt32(i))), p.index == i, p.declaredSize == 15 else { Issue.record("expected writePart"); return }
                m.partWritten(newlines: i == 0 ? 2 : 1, lastByte: 0x0A)
                guard case .sendPong = m.received(empty(.ping)) else { Issue.record("a ping inside a bundle"); return }
            }
            guard case .receiving(_, let t) = m.state else { Issue.record("expected receiving"); return }
            #expect(t.nextPart == 2 && t.received == 30 && t.lines == 3)
            guard case .applyBundle(let bs, let bt, let declared) = m.received(end(sequence: sequence)), bs == Self.session, bt.sequence == sequence,
                  declared.sequence == sequence, bt.declared == declared, !bt.streamed else {
                Issue.record("expected applyBundle"); return
            }
            m.bundleFinished()
            guard case .ready = m.state else { Issue.record("ready again"); return }
        }
        guard case .household(_, let h) = m.received(json(.householdRequest, ["type": .null, "from": .null, "to": .null])), h.type == nil else {
            Issue.record("expected household"); return
        }
        #expect(m.closed() == nil, "no bundle in progress")
    }

    /// A machine past a version-`version` hello and authentication.
    func ready(version: UInt16) -> Machine {
        var m = Machine()
        _ = m.received(.hello(SyncHello(version: version)))
        _ = m.received(auth)
        m.authenticated(Self.session)
        return m
    }

    func streamBegin(sequence: Int = 1) -> SyncInbound { json(.bundleStreamBegin, ["sequence": .int(sequence)]) }
    func streamEnd(sequence: Int = 1, parts: Int = 2, items: Int = 1, size: Int = 30) -> SyncInbound {
        json(.bundleStreamEnd, ["sequence": .int(sequence), "manifest_hash": .string(Self.hash), "parts": .int(parts),
                                "item_count": .int(items), "uncompressed_size": .int(size)])
    }

    /// A version-3 machine with a stream open and two parts of 15 bytes (three lines) written.
    func streamed(_ dir: TempDir) throws -> Machine {
        var m = ready(version: SyncHello.streamVersion)
        guard case .openBundle(_, .stream(let sequence)) = m.received(streamBegin()), sequence == 1 else { Issue.record("expected openBundle of a stream"); return m }
        m.bundleOpened(try QuarantineFile(directory: dir.path))
        for i in 0..<2 {
            guard case .writePart = m.received(part(UInt32(i))) else { Issue.record("expected writePart"); return m }
            m.partWritten(newlines: i == 0 ? 2 : 1, lastByte: 0x0A)
        }
        return m
    }

    @Test("version 3: a stream's parts are taken with nothing declared; BUNDLE_STREAM_END declares the bundle, which must be what arrived")
    func streamedBundle() throws {
        let dir = try TempDir()
        var m = try streamed(dir)
        guard case .receiving(_, let t) = m.state else { Issue.record("expected receiving"); return }
        #expect(t.streamed && t.declared == nil && t.nextPart == 2 && t.lines == 3)
        guard case .sendPong = m.received(empty(.ping)) else { Issue.record("a ping inside a stream"); return }
        guard case .applyBundle(let s, let bt, let declared) = m.received(streamEnd()), s == Self.session else { Issue.record("expected applyBundle"); return }
        #expect(declared.manifestHash == Self.hash && declared.parts == 2 && declared.itemCount == 1 && declared.uncompressedSize == 30)
        #expect(bt.declared == declared && bt.streamed)
        m.bundleFinished()
        guard case .ready = m.state else { Issue.record("ready again"); return }
        // A declared bundle may follow a stream in the same session.
        guard case .openBundle(_, .begin) = m.received(begin(sequence: 2)) else { Issue.record("BUNDLE_BEGIN after a stream"); return }
        // Each end that does not match what arrived closes the session, and the file is handed back to be removed.
        let mismatched: [(String, SyncInbound)] = [("sequence", streamEnd(sequence: 2)), ("parts", streamEnd(parts: 3)),
                                                   ("size", streamEnd(size: 31)), ("items", streamEnd(items: 2))]
        for (what, end) in mismatched {
            m = try streamed(dir)
            #expect(failCode(m.received(end)) == .malformedFrame, "\(what)")
            #expect(isClosed(m) && m.closed() != nil, "\(what)")
        }
    }

    @Test("a line that runs past a part's limit closes the session as soon as a part shows it, in one part or across several; parts out of order in a stream too")
    func lineLongerThanAPart() throws {
        let dir = try TempDir()
        let limit = BundlePartCodec.maxPartSize
        var m = try streamed(dir)
        // A part without a newline, then another: the open line grows across them.
        guard case .writePart = m.received(part(2)) else { Issue.record("expected writePart"); return }
        #expect(m.partWritten(newlines: 0, lastByte: 0x41, tail: limit / 2) == nil)
        guard case .writePart = m.received(part(3)) else { Issue.record("expected writePart"); return }
        let error = m.partWritten(newlines: 0, lastByte: 0x41, tail: limit / 2)
        #expect(error?.code == .malformedFrame && error?.message.contains("line") == true)
        #expect(isClosed(m) && m.closed() != nil, "the file is handed back to be removed")
        // A newline resets it: the bytes after the last one count.
        m = try streamed(dir)
        guard case .writePart = m.received(part(2)) else { Issue.record("expected writePart"); return }
        #expect(m.partWritten(newlines: 0, lastByte: 0x41, tail: limit - 1) == nil)
        guard case .writePart = m.received(part(3)) else { Issue.record("expected writePart"); return }
        #expect(m.partWritten(newlines: 1, lastByte: 0x41, tail: 10) == nil)
        guard case .writePart = m.received(part(4)) else { Issue.record("expected writePart"); return }
        #expect(m.partWritten(newlines: 0, lastByte: 0x41, tail: limit - 10)?.code == .malformedFrame)
        // Parts of a stream come in order.
        m = try streamed(dir)
        #expect(failCode(m.received(part(5))) == .malformedFrame)
    }

    @Test("streams need version 3; BUNDLE_END never closes a stream nor BUNDLE_STREAM_END a declared bundle; no stream opens inside a bundle")
    func streamOutOfState() throws {
        let dir = try TempDir()
        for version in [SyncHello.currentVersion, SyncHello.restoreVersion] {
            var m = ready(version: version)
            guard case .fail(let e) = m.received(streamBegin()) else { Issue.record("a stream in version \(version)"); continue }
            #expect(e.code == .unexpectedMessage && e.message.contains("version 3"))
        }
        var m = ready(version: SyncHello.streamVersion)
        #expect(failCode(m.received(streamEnd())) == .unexpectedMessage, "an end outside a bundle")
        m = try streamed(dir)
        #expect(failCode(m.received(end())) == .unexpectedMessage)
        m = try streamed(dir)
        #expect(failCode(m.received(streamBegin(sequence: 2))) == .unexpectedMessage)
        m = try streamed(dir)
        #expect(failCode(m.received(begin(sequence: 2))) == .unexpectedMessage)
        m = ready(version: SyncHello.streamVersion)
        guard case .openBundle = m.received(begin()) else { Issue.record("BUNDLE_BEGIN in version 3"); return }
        m.bundleOpened(try QuarantineFile(directory: dir.path))
        #expect(failCode(m.received(streamEnd())) == .unexpectedMessage)
        #expect(m.closed() != nil)
    }

    @Test("before authentication every other frame is refused as unauthorized; a malformed AUTH is refused too")
    func unauthenticated() {
        for kind in SyncFrame.Kind.allCases where kind != .auth && kind != .enroll {
            var m = Machine()
            _ = m.received(.hello(SyncHello()))
            guard case .refuse(let e) = m.received(empty(kind)) else { Issue.record("\(kind) was not refused"); continue }
            #expect(e.code == .unauthorized)
            #expect(isClosed(m))
            guard case .none = m.received(empty(.ping)) else { Issue.record("closed is closed"); continue }
        }
        var m = Machine()
        _ = m.received(.hello(SyncHello()))
        guard case .refuse(let e) = m.received(json(.auth, ["device_name": .string("phone")])) else { Issue.record("a malformed AUTH"); return }
        #expect(e.code == .malformedFrame && e.message.contains("AUTH"))
        m = Machine()
        _ = m.received(.hello(SyncHello()))
        let enroll = json(.enroll, ["device_name": .string("p"), "enrollment_secret": .string("s"), "client_time": .string("2026-01-01T00:00:00.000Z")])
        guard case .authenticate(.enroll) = m.received(enroll) else { Issue.record("ENROLL must be checked"); return }
        #expect(failCode(m.received(empty(.ping))) == .unexpectedMessage, "nothing while the credentials are checked")
    }

    @Test("hello flags must be 0; a PING must be empty; server-only frames are unexpected")
    func helloFlagsAndPing() {
        var m = Machine()
        #expect(failCode(m.received(.hello(SyncHello(flags: 1)))) == .malformedFrame)
        #expect(isClosed(m))
        m = ready()
        #expect(failCode(m.received(.frame(SyncFrame(kind: .ping, payload: ByteBuffer(bytes: [0]))))) == .malformedFrame)
        for kind in [SyncFrame.Kind.authOK, .chainStatus, .bundleAck, .pong, .household, .error] {
            m = ready()
            #expect(failCode(m.received(empty(kind))) == .unexpectedMessage, "\(kind)")
        }
    }

    @Test("frames out of their state are unexpected_message and close the session")
    func outOfState() throws {
        let dir = try TempDir()
        var m = ready()
        #expect(failCode(m.received(part(0))) == .unexpectedMessage)
        #expect(isClosed(m))
        m = ready()
        #expect(failCode(m.received(end())) == .unexpectedMessage)
        m = ready()
        #expect(failCode(m.received(auth)) == .unexpectedMessage)
        m = ready()
        #expect(failCode(m.received(.hello(SyncHello()))) == .unexpectedMessage)
        m = try receiving(dir)
        #expect(failCode(m.received(begin())) == .unexpectedMessage)
        #expect(m.closed() != nil, "closing hands back the open quarantine file")
        m = try receiving(dir)
        #expect(failCode(m.received(json(.chainStatusRequest, ["device_chain_hash": .string(Self.hash)]))) == .unexpectedMessage)
        m = try receiving(dir, begin: begin(parts: 1, items: 0, size: 1))
        _ = m.received(part(0, size: 1))
        m.partWritten(newlines: 0, lastByte: 0x41)
        #expect(failCode(m.received(end())) == .malformedFrame, "one line is not header, items and trailer")
        var fresh = Machine()
        #expect(failCode(fresh.received(empty(.ping))) == .badMagic)
    }

    @Test("parts: in order, within the part limit and the declared total; the end matches the begin")
    func transferChecks() throws {
        let dir = try TempDir()
        var m = try receiving(dir)
        #expect(failCode(m.received(part(1))) == .malformedFrame, "out of order")
        m = try receiving(dir)
        #expect(failCode(m.received(part(0, size: 31))) == .inflateLimit, "more than BUNDLE_BEGIN declared")
        m = try receiving(dir, begin: begin(size: 100_000_000))
        #expect(failCode(m.received(part(0, size: UInt32(BundlePartCodec.maxPartSize + 1)))) == .inflateLimit)
        m = try receiving(dir)
        _ = m.received(part(0))
        _ = m.received(part(1))
        #expect(failCode(m.received(part(2))) == .malformedFrame, "more parts than declared")
        m = try receiving(dir)
        _ = m.received(part(0))
        #expect(failCode(m.received(end())) == .malformedFrame, "ended early")
        m = try receiving(dir)
        _ = m.received(part(0))
        _ = m.received(part(1))
        #expect(failCode(m.received(end(sequence: 2))) == .malformedFrame, "END does not match BEGIN")
        m = ready()
        #expect(failCode(m.received(SyncInbound.frame(SyncFrame(kind: .bundlePart, payload: ByteBuffer(bytes: [0, 0, 0]))))) == SyncProtocolError.Code.unexpectedMessage,
                "outside a bundle, even malformed")
        m = try receiving(dir)
        #expect(failCode(m.received(SyncInbound.frame(SyncFrame(kind: .bundlePart, payload: ByteBuffer(bytes: [0, 0, 0]))))) == SyncProtocolError.Code.malformedFrame)
    }

    @Test("while a bundle is applied, a PING or the next BUNDLE_BEGIN (sent before the ack) is unexpected_message; what cannot be decoded before AUTH is unauthorized")
    func beforeTheReply() throws {
        let dir = try TempDir()
        for early in [empty(.ping), begin(sequence: 2)] {
            var m = try receiving(dir)
            _ = m.received(part(0))
            m.partWritten(newlines: 2, lastByte: 0x0A)
            _ = m.received(part(1))
            m.partWritten(newlines: 1, lastByte: 0x0A)
            guard case .applyBundle = m.received(end()) else { Issue.record("expected applyBundle"); continue }
            #expect(failCode(m.received(early)) == .unexpectedMessage)
            #expect(m.closed() != nil, "closing hands back the bundle's quarantine file")
        }
        var m = Machine()
        _ = m.received(.hello(SyncHello()))
        guard case .refuse(let e) = m.undecodable(SyncProtocolError(.frameTooLarge, "too large")) else { Issue.record("expected a refusal"); return }
        #expect(e.code == .unauthorized)
        m = ready()
        #expect(failCode(m.undecodable(SyncProtocolError(.frameTooLarge, "too large"))) == .frameTooLarge)
        m = Machine()
        #expect(failCode(m.undecodable(SyncProtocolError(.badMagic, "not a hello"))) == .badMagic)
    }
}
