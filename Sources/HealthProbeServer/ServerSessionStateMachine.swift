import HealthProbeProtocol

/// The server side of one sync connection (Protocol/README.md section 4) as a
/// state machine whose states hold the session: who authenticated, and the
/// bundle being received with its progress. It decodes every frame into its
/// typed message, decides what it means in the current state, and returns an
/// action; the connection handler carries the action out (TLS, files, the
/// registry, the replica) and reports back (`authenticated`, `bundleOpened`,
/// `partWritten`, `bundleFinished`, `closed`). Pure: no I/O, tested on its own.
public struct ServerSessionStateMachine: Sendable {
    /// Who this connection is, once authenticated.
    public struct Session: Sendable, Equatable {
        public var identity: DeviceRegistry.Identity
        /// Device clock minus server clock at authentication, seconds.
        public var clockOffset: Double?

        public init(identity: DeviceRegistry.Identity, clockOffset: Double?) {
            self.identity = identity
            self.clockOffset = clockOffset
        }
    }

    /// How a bundle opened: declared in full (`BUNDLE_BEGIN`), or streamed (version 3's
    /// `BUNDLE_STREAM_BEGIN`: what it declares comes with `BUNDLE_STREAM_END`).
    public enum Opening: Sendable, Equatable {
        case begin(BundleBegin)
        case stream(sequence: Int)

        public var sequence: Int {
            switch self {
            case .begin(let b): return b.sequence
            case .stream(let sequence): return sequence
            }
        }
    }

    /// A bundle being received: how it opened, the quarantine file the parts go to, and
    /// what has arrived so far.
    public struct Transfer: Sendable {
        public let opening: Opening
        public let file: QuarantineFile
        /// What the bundle declares: `BUNDLE_BEGIN`'s, or a stream's `BUNDLE_STREAM_END`'s once it came.
        public fileprivate(set) var declared: BundleBegin?
        /// The next part index expected.
        public fileprivate(set) var nextPart = 0
        /// Uncompressed bytes written so far.
        public fileprivate(set) var received = 0
        /// LF bytes written so far, and whether the last byte written was one.
        public fileprivate(set) var newlines = 0
        public fileprivate(set) var endsWithNewline = true
        /// Bytes of the line still open (after the last LF written).
        public fileprivate(set) var openLine = 0

        init(opening: Opening, file: QuarantineFile) {
            self.opening = opening
            self.file = file
            if case .begin(let b) = opening { declared = b }
        }

        /// Lines so far: newlines, plus an unterminated last line.
        public var lines: Int { newlines + (endsWithNewline ? 0 : 1) }
        public var sequence: Int { opening.sequence }
        public var streamed: Bool { if case .stream = opening { true } else { false } }
    }

    public enum State: Sendable {
        case awaitingHello
        /// Hello exchanged; the first frame must be `AUTH` or `ENROLL`.
        case awaitingAuth
        /// The `AUTH`/`ENROLL` is being checked.
        case authenticating
        case ready(Session)
        /// `BUNDLE_BEGIN` (or `BUNDLE_STREAM_BEGIN`) accepted; its quarantine file is being opened.
        case opening(Session, Opening)
        /// Between `BUNDLE_BEGIN` and `BUNDLE_END` (or a stream's begin and end).
        case receiving(Session, Transfer)
        /// `BUNDLE_END` (or `BUNDLE_STREAM_END`) arrived and matched; verifying and applying until the reply is sent.
        case applying(Session, Transfer)
        /// Over; holds the quarantine file of a bundle left incomplete, until `closed()` hands it over.
        case closed(leftover: QuarantineFile?)
    }

    public enum Credentials: Sendable, Equatable {
        case auth(AuthRequest)
        case enroll(EnrollRequest)
    }

    public enum Action: Sendable {
        /// Answer the hello with this version (the client's).
        case sendHello(version: UInt16)
        /// Check the credentials; then `authenticated(_:)`, or refuse (slowly) and close.
        case authenticate(Credentials)
        /// An unauthenticated peer sent something else or something malformed: refuse (slowly) and close.
        case refuse(SyncProtocolError)
        case sendPong
        case chainStatus(Session, ChainStatusRequest)
        case household(Session, HouseholdRequest)
        /// Send the stored bundle the request names (`RESTORE_BUNDLE`, `RESTORE_PART`s) or an error; the session stays ready.
        case restore(Session, RestoreRequest)
        /// Open a quarantine file for the bundle; then `bundleOpened(_:)`.
        case openBundle(Session, Opening)
        /// Inflate the part into the transfer's file; then `partWritten(newlines:lastByte:)`.
        case writePart(QuarantineFile, BundlePart)
        /// The whole bundle is in the file as declared (`declared`): authorize, verify, apply, reply; then `bundleFinished()`.
        case applyBundle(Session, Transfer, declared: BundleBegin)
        /// Send `ERROR` with this and close.
        case fail(SyncProtocolError)
        /// The session is over; ignore.
        case none
    }

    public private(set) var state: State = .awaitingHello
    /// The protocol version the hello agreed (the client's); 1 until then.
    public private(set) var version: UInt16 = 1

    public init() {}

    public mutating func received(_ message: SyncInbound) -> Action {
        switch (state, message) {
        case (.closed, _):
            return .none
        case (.awaitingHello, .hello(let hello)):
            guard hello.flags == 0 else { return close(.malformedFrame, "the hello's flags must be 0 in protocol version \(hello.version) (they are \(hello.flags))") }
            state = .awaitingAuth
            version = hello.version
            return .sendHello(version: hello.version)
        case (.awaitingHello, .frame):
            return close(.badMagic, "a frame before the hello")
        case (_, .hello):
            return close(.unexpectedMessage, "a second hello")
        case (.awaitingAuth, .frame(let f)):
            // Unauthenticated: nothing but AUTH or ENROLL is even decoded.
            guard f.kind == .auth || f.kind == .enroll else {
                return refuse(SyncProtocolError(.unauthorized, "authenticate first: the first frame after the hello must be AUTH or ENROLL"))
            }
            do {
                switch try ClientMessage(f) {
                case .auth(let a):
                    state = .authenticating
                    return .authenticate(.auth(a))
                case .enroll(let e):
                    state = .authenticating
                    return .authenticate(.enroll(e))
                default:
                    return refuse(SyncProtocolError(.unauthorized, "authenticate first"))
                }
            } catch {
                return refuse(Self.protocolError(error))
            }
        case (.authenticating, .frame(let f)), (.opening(_, _), .frame(let f)), (.applying(_, _), .frame(let f)):
            return close(.unexpectedMessage, "a \(f.kind) frame before the reply to the previous one")
        case (.ready(let session), .frame(let f)):
            // Which kinds this state accepts is decided before any payload is read.
            switch f.kind {
            case .ping, .chainStatusRequest, .householdRequest, .bundleBegin: break
            case .restoreRequest where version >= SyncHello.restoreVersion: break
            case .restoreRequest: return close(.unexpectedMessage, "RESTORE_REQUEST needs protocol version \(SyncHello.restoreVersion); this connection's hello said \(version)")
            case .bundleStreamBegin where version >= SyncHello.streamVersion: break
            case .bundleStreamBegin: return close(.unexpectedMessage, "BUNDLE_STREAM_BEGIN needs protocol version \(SyncHello.streamVersion); this connection's hello said \(version)")
            case .auth, .enroll: return close(.unexpectedMessage, "this connection is already authenticated")
            case .bundlePart, .bundleEnd, .bundleStreamEnd: return close(.unexpectedMessage, "\(f.kind) outside a bundle")
            default: return close(.unexpectedMessage, "a \(f.kind) frame is not for the server")
            }
            let message: ClientMessage
            do { message = try ClientMessage(f) } catch { return close(Self.protocolError(error)) }
            switch message {
            case .ping: return .sendPong
            case .chainStatusRequest(let r): return .chainStatus(session, r)
            case .householdRequest(let r): return .household(session, r)
            case .restoreRequest(let r): return .restore(session, r)
            case .bundleBegin(let b):
                state = .opening(session, .begin(b))
                return .openBundle(session, .begin(b))
            case .bundleStreamBegin(let b):
                state = .opening(session, .stream(sequence: b.sequence))
                return .openBundle(session, .stream(sequence: b.sequence))
            default: return close(.unexpectedMessage, "a \(f.kind) frame is not accepted here")
            }
        case (.receiving(let session, let transfer), .frame(let f)):
            switch f.kind {
            case .ping, .bundlePart: break
            case .bundleEnd where !transfer.streamed, .bundleStreamEnd where transfer.streamed: break
            case .bundleEnd: return close(.unexpectedMessage, "BUNDLE_END closes a bundle that BUNDLE_BEGIN opened; a streamed bundle ends with BUNDLE_STREAM_END")
            case .bundleStreamEnd: return close(.unexpectedMessage, "BUNDLE_STREAM_END closes a streamed bundle; one that BUNDLE_BEGIN opened ends with BUNDLE_END")
            case .bundleBegin, .bundleStreamBegin: return close(.unexpectedMessage, "\(f.kind) while a bundle is open")
            default: return close(.unexpectedMessage, "a \(f.kind) frame while a bundle is being received")
            }
            let message: ClientMessage
            do { message = try ClientMessage(f) } catch { return close(Self.protocolError(error)) }
            switch message {
            case .ping: return .sendPong
            case .bundlePart(let part): return receive(part, session: session, transfer: transfer)
            case .bundleEnd(let message): return end(message, session: session, transfer: transfer)
            case .bundleStreamEnd(let declared): return endStream(declared, session: session, transfer: transfer)
            default: return close(.unexpectedMessage, "a \(f.kind) frame is not accepted here")
            }
        }
    }

    /// What arrived could not be decoded into a message (a frame length over the
    /// maximum or of 0, an unknown frame type; section 2). Before the hello that is the
    /// decoder's own answer; before authentication, `unauthorized` (slowly), like any
    /// frame but `AUTH`/`ENROLL`; afterwards, the decoder's answer.
    public mutating func undecodable(_ error: SyncProtocolError) -> Action {
        switch state {
        case .closed: return .none
        case .awaitingAuth: return refuse(SyncProtocolError(.unauthorized, "authenticate first: the first frame after the hello must be AUTH or ENROLL"))
        default: return close(error)
        }
    }

    private mutating func receive(_ part: BundlePart, session: Session, transfer: Transfer) -> Action {
        // A stream declares nothing before its end: the protocol's own limits bound it.
        let parts = transfer.declared?.parts ?? Int(SyncLimits.parts.upperBound)
        let size = transfer.declared?.uncompressedSize ?? Int(SyncLimits.uncompressedSize.upperBound)
        guard part.index == transfer.nextPart, transfer.nextPart < parts else {
            if transfer.declared == nil, part.index == transfer.nextPart {
                return close(.malformedFrame, "BUNDLE_PART \(part.index) arrived; a streamed bundle holds at most \(parts) parts")
            }
            return close(.malformedFrame, "BUNDLE_PART \(part.index) arrived; expected part \(transfer.nextPart)" + (transfer.declared.map { " of \($0.parts)" } ?? ""))
        }
        guard part.declaredSize <= BundlePartCodec.maxPartSize else {
            return close(.inflateLimit, "BUNDLE_PART \(part.index) declares \(part.declaredSize) uncompressed bytes; the limit is \(BundlePartCodec.maxPartSize)")
        }
        guard part.declaredSize <= size - transfer.received else {
            return close(.inflateLimit, transfer.declared == nil ? "the parts hold more than the \(size) bytes a bundle may hold"
                                                                 : "the parts hold more than the \(size) bytes BUNDLE_BEGIN declared")
        }
        var t = transfer
        t.nextPart += 1
        t.received += part.declaredSize
        state = .receiving(session, t)
        return .writePart(t.file, part)
    }

    private mutating func end(_ end: BundleEnd, session: Session, transfer t: Transfer) -> Action {
        guard let begin = t.declared else { return close(.unexpectedMessage, "BUNDLE_END outside a bundle BUNDLE_BEGIN opened") }
        guard end.sequence == begin.sequence, end.manifestHash == begin.manifestHash else {
            return close(.malformedFrame, "BUNDLE_END (sequence \(end.sequence)) does not match its BUNDLE_BEGIN (sequence \(begin.sequence))")
        }
        return matched(begin, "BUNDLE_BEGIN", session: session, transfer: t)
    }

    /// `BUNDLE_STREAM_END`: what the stream declares must be what arrived.
    private mutating func endStream(_ declared: BundleBegin, session: Session, transfer: Transfer) -> Action {
        guard declared.sequence == transfer.sequence else {
            return close(.malformedFrame, "BUNDLE_STREAM_END (sequence \(declared.sequence)) does not match its BUNDLE_STREAM_BEGIN (sequence \(transfer.sequence))")
        }
        var t = transfer
        t.declared = declared
        return matched(declared, "BUNDLE_STREAM_END", session: session, transfer: t)
    }

    /// The end of a bundle: the parts, bytes and lines that arrived must be those `declared`.
    private mutating func matched(_ declared: BundleBegin, _ by: String, session: Session, transfer t: Transfer) -> Action {
        guard t.nextPart == declared.parts, t.received == declared.uncompressedSize else {
            return close(.malformedFrame, "the bundle ended after \(t.nextPart) parts and \(t.received) bytes; \(by) declared \(declared.parts) parts and \(declared.uncompressedSize) bytes")
        }
        // Header, items, trailer: one line each.
        guard t.lines == declared.itemCount + 2 else {
            return close(.malformedFrame, "\(by) declared \(declared.itemCount) items; the bundle holds \(max(t.lines - 2, 0)) (\(t.lines) lines)")
        }
        state = .applying(session, t)
        return .applyBundle(session, t, declared: declared)
    }

    /// The credentials were accepted.
    public mutating func authenticated(_ session: Session) {
        if case .authenticating = state { state = .ready(session) }
    }

    /// The quarantine file for the bundle `BUNDLE_BEGIN` announced is open.
    public mutating func bundleOpened(_ file: QuarantineFile) {
        if case .opening(let session, let opening) = state { state = .receiving(session, Transfer(opening: opening, file: file)) }
    }

    /// The last part was inflated and written: `newlines` LF bytes, ending with `lastByte`,
    /// `tail` bytes after its last LF (all of them when it held none). A line that runs past
    /// a part's limit closes the session (section 3: parts are cut at line boundaries, and no
    /// line is longer than a part); the error is returned for the caller to send.
    @discardableResult
    public mutating func partWritten(newlines: Int, lastByte: UInt8?, tail: Int = 0) -> SyncProtocolError? {
        guard case .receiving(let session, var t) = state else { return nil }
        t.newlines += newlines
        if let lastByte { t.endsWithNewline = lastByte == 0x0A }
        t.openLine = newlines > 0 ? tail : t.openLine + tail
        guard t.openLine < BundlePartCodec.maxPartSize else {
            let error = SyncProtocolError(.malformedFrame, "a line of the bundle runs past \(BundlePartCodec.maxPartSize) bytes by part \(t.nextPart - 1): a bundle is cut into parts at line boundaries, and no line (with its newline) is longer than a part")
            state = .receiving(session, t)
            _ = close(error)
            return error
        }
        state = .receiving(session, t)
        return nil
    }

    /// The reply to `BUNDLE_END` (ack or error) was sent; the next bundle may begin.
    public mutating func bundleFinished() {
        if case .applying(let session, _) = state { state = .ready(session) }
    }

    /// The connection is closing (an error, a refusal, or the peer left). Returns
    /// the quarantine file of a bundle still in progress, for the handler to remove.
    @discardableResult
    public mutating func closed() -> QuarantineFile? {
        let file = leftover
        state = .closed(leftover: nil)
        return file
    }

    /// The quarantine file of the bundle in progress, if any.
    private var leftover: QuarantineFile? {
        switch state {
        case .receiving(_, let t), .applying(_, let t): return t.file
        case .closed(let file): return file
        default: return nil
        }
    }

    private mutating func close(_ code: SyncProtocolError.Code, _ message: String) -> Action {
        close(SyncProtocolError(code, message))
    }

    private mutating func close(_ error: SyncProtocolError) -> Action {
        state = .closed(leftover: leftover)
        return .fail(error)
    }

    private mutating func refuse(_ error: SyncProtocolError) -> Action {
        state = .closed(leftover: nil)
        return .refuse(error)
    }

    static func protocolError(_ error: any Error) -> SyncProtocolError {
        error as? SyncProtocolError ?? SyncProtocolError(.malformedFrame, "\(error)")
    }
}
