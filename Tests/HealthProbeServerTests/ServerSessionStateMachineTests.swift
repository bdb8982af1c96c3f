import NIOCore
import Testing
@testable import HealthProbeServer
import HealthProbeProtocol
import HealthProbeNode
import HealthProbeTestSupport

@Suite("Server session state machine")
struct ServerSessionStateMachineTests {
    func frame(_ kind: SyncFrame.Kind) -> SyncInbound { .frame(SyncFrame(kind: kind, payload: ByteBuffer())) }
    func isFail(_ a: ServerSessionStateMachine.Action, _ code: SyncProtocolError.Code) -> Bool {
        if case .fail(let e) = a { return e.code == code }
        return false
    }

    @Test("a whole session: hello, auth, status, a bundle with a ping inside, a second bundle, household")
    func happyPath() {
        var m = ServerSessionStateMachine()
        #expect(m.received(.hello(SyncHello())) == .sendHello)
        #expect(m.state == .awaitingAuth)
        guard case .authenticate = m.received(frame(.auth)) else { Issue.record("expected authenticate"); return }
        m.authenticated()
        #expect(m.state == .ready)
        guard case .chainStatus = m.received(frame(.chainStatusRequest)) else { Issue.record("expected chainStatus"); return }
        for _ in 0..<2 {
            guard case .beginBundle = m.received(frame(.bundleBegin)) else { Issue.record("expected beginBundle"); return }
            #expect(m.state == .receiving)
            guard case .receivePart = m.received(frame(.bundlePart)) else { Issue.record("expected receivePart"); return }
            #expect(m.received(frame(.ping)) == .sendPong)
            guard case .endBundle = m.received(frame(.bundleEnd)) else { Issue.record("expected endBundle"); return }
            #expect(m.state == .applying)
            m.bundleFinished()
            #expect(m.state == .ready)
        }
        guard case .household = m.received(frame(.householdRequest)) else { Issue.record("expected household"); return }
        #expect(m.received(frame(.ping)) == .sendPong)
    }

    @Test("before authentication every other frame is refused as unauthorized, and the session closes")
    func unauthenticated() {
        for kind in SyncFrame.Kind.allCases where kind != .auth && kind != .enroll {
            var m = ServerSessionStateMachine()
            _ = m.received(.hello(SyncHello()))
            guard case .refuse(let e) = m.received(frame(kind)) else { Issue.record("\(kind) was not refused"); continue }
            #expect(e.code == .unauthorized)
            #expect(m.state == .closed)
            #expect(m.received(frame(.ping)) == .none)
        }
        var m = ServerSessionStateMachine()
        _ = m.received(.hello(SyncHello()))
        guard case .authenticate = m.received(frame(.enroll)) else { Issue.record("ENROLL must be checked"); return }
        #expect(m.state == .awaitingAuth, "only authenticated() moves on")
    }

    @Test("frames out of their state are unexpected_message and close the session")
    func outOfState() {
        func ready() -> ServerSessionStateMachine {
            var m = ServerSessionStateMachine()
            _ = m.received(.hello(SyncHello()))
            _ = m.received(frame(.auth))
            m.authenticated()
            return m
        }
        var m = ready()
        #expect(isFail(m.received(frame(.bundlePart)), .unexpectedMessage))
        #expect(m.state == .closed)
        m = ready()
        #expect(isFail(m.received(frame(.bundleEnd)), .unexpectedMessage))
        m = ready()
        #expect(isFail(m.received(frame(.auth)), .unexpectedMessage))
        m = ready()
        #expect(isFail(m.received(.hello(SyncHello())), .unexpectedMessage))
        m = ready()
        #expect(isFail(m.received(frame(.bundleAck)), .unexpectedMessage))
        m = ready()
        _ = m.received(frame(.bundleBegin))
        #expect(isFail(m.received(frame(.bundleBegin)), .unexpectedMessage))
        m = ready()
        _ = m.received(frame(.bundleBegin))
        #expect(isFail(m.received(frame(.chainStatusRequest)), .unexpectedMessage))
        m = ready()
        _ = m.received(frame(.bundleBegin))
        _ = m.received(frame(.bundleEnd))
        #expect(isFail(m.received(frame(.bundleBegin)), .unexpectedMessage), "the client waits for the ack")
        var fresh = ServerSessionStateMachine()
        #expect(isFail(fresh.received(frame(.ping)), .badMagic))
    }
}
