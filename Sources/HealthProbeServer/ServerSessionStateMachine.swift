import HealthProbeProtocol

/// The server side of one sync connection as a state machine (Protocol/README.md
/// section 4): it decides what each arriving message means in the current
/// state; the connection handler carries out the returned action (TLS, files,
/// the registry, the replica) and reports back with `authenticated()`,
/// `bundleFinished()` or `closed()`. Pure: no I/O, tested on its own.
public struct ServerSessionStateMachine: Sendable {
    public enum State: Sendable, Equatable {
        case awaitingHello
        /// Hello exchanged; the first frame must be `AUTH` or `ENROLL`.
        case awaitingAuth
        case ready
        /// Between `BUNDLE_BEGIN` and `BUNDLE_END`.
        case receiving
        /// `BUNDLE_END` arrived; verifying and applying until the reply is sent.
        case applying
        case closed
    }

    public enum Action: Sendable, Equatable {
        case sendHello
        /// Check the `AUTH`/`ENROLL` frame; then `authenticated()`, or refuse (slowly) and close.
        case authenticate(SyncFrame)
        /// An unauthenticated peer sent something else: refuse (slowly) and close.
        case refuse(SyncProtocolError)
        case sendPong
        case chainStatus(SyncFrame)
        case household(SyncFrame)
        /// Open a quarantine file for the bundle `BUNDLE_BEGIN` announces.
        case beginBundle(SyncFrame)
        case receivePart(SyncFrame)
        /// Close the quarantine file, verify and apply, reply; then `bundleFinished()`.
        case endBundle(SyncFrame)
        /// Send `ERROR` with this and close.
        case fail(SyncProtocolError)
        /// The session is over; ignore.
        case none
    }

    public private(set) var state: State = .awaitingHello

    public init() {}

    public mutating func received(_ message: SyncInbound) -> Action {
        switch (state, message) {
        case (.closed, _):
            return .none
        case (.awaitingHello, .hello):
            state = .awaitingAuth
            return .sendHello
        case (.awaitingHello, .frame):
            return close(.badMagic, "a frame before the hello")
        case (_, .hello):
            return close(.unexpectedMessage, "a second hello")
        case (.awaitingAuth, .frame(let f)):
            guard f.kind == .auth || f.kind == .enroll else {
                state = .closed
                return .refuse(SyncProtocolError(.unauthorized, "authenticate first: the first frame after the hello must be AUTH or ENROLL"))
            }
            return .authenticate(f)
        case (.ready, .frame(let f)):
            switch f.kind {
            case .ping: return .sendPong
            case .chainStatusRequest: return .chainStatus(f)
            case .householdRequest: return .household(f)
            case .bundleBegin:
                state = .receiving
                return .beginBundle(f)
            case .auth, .enroll: return close(.unexpectedMessage, "this connection is already authenticated")
            case .bundlePart, .bundleEnd: return close(.unexpectedMessage, "\(f.kind) outside a bundle")
            default: return close(.unexpectedMessage, "a \(f.kind) frame is not for the server")
            }
        case (.receiving, .frame(let f)):
            switch f.kind {
            case .bundlePart: return .receivePart(f)
            case .bundleEnd:
                state = .applying
                return .endBundle(f)
            case .ping: return .sendPong
            case .bundleBegin: return close(.unexpectedMessage, "BUNDLE_BEGIN while a bundle is open")
            default: return close(.unexpectedMessage, "a \(f.kind) frame while a bundle is being received")
            }
        case (.applying, .frame(let f)):
            return close(.unexpectedMessage, "a \(f.kind) frame before the acknowledgement of the bundle")
        }
    }

    /// The `AUTH`/`ENROLL` check passed.
    public mutating func authenticated() {
        if state == .awaitingAuth { state = .ready }
    }

    /// The reply to `BUNDLE_END` (ack or error) was sent; the next bundle may begin.
    public mutating func bundleFinished() {
        if state == .applying { state = .ready }
    }

    /// The handler closed the connection (an error, a refusal, or the peer left).
    public mutating func closed() { state = .closed }

    private mutating func close(_ code: SyncProtocolError.Code, _ message: String) -> Action {
        state = .closed
        return .fail(SyncProtocolError(code, message))
    }
}
