/// A frame a server may send, decoded into its typed reply with every member
/// checked (Protocol/README.md section 2.2). Decoding is pure; a frame of a kind
/// only a client sends is `unexpected_message`, a bad payload `malformed_frame`
/// naming the frame and the member. A client acts on these values only.
public enum ServerMessage: Sendable, Equatable {
    case authOK(AuthOK)
    case chainStatus(ChainStatus)
    case bundleAck(BundleAck)
    case pong
    case household(HouseholdSummary.Report)
    case restoreBundle(RestoreBundle)
    case restorePart(BundlePart)
    /// Version 3: a stored bundle declared as `BUNDLE_BEGIN` declares one, its chain state after its parts.
    case restoreStream(BundleBegin)
    case restoreState(RestoreState)
    case error(ErrorReply)

    public init(_ frame: SyncFrame) throws {
        switch frame.kind {
        case .authOK: self = .authOK(try AuthOK(frame))
        case .chainStatus: self = .chainStatus(try ChainStatus(frame))
        case .bundleAck: self = .bundleAck(try BundleAck(frame))
        case .household: self = .household(try HouseholdSummary.Report(wire: frame))
        case .restoreBundle: self = .restoreBundle(try RestoreBundle(frame))
        case .restorePart: self = .restorePart(try BundlePart(frame))
        case .restoreStream: self = .restoreStream(try BundleBegin(frame))
        case .restoreState: self = .restoreState(try RestoreState(frame))
        case .error: self = .error(try ErrorReply(frame))
        case .pong:
            guard frame.payload.readableBytes == 0 else {
                throw SyncProtocolError(.malformedFrame, "PONG: the payload must be empty (it holds \(frame.payload.readableBytes) bytes)")
            }
            self = .pong
        case .auth, .enroll, .chainStatusRequest, .bundleBegin, .bundlePart, .bundleEnd, .bundleStreamBegin, .bundleStreamEnd, .ping, .householdRequest, .restoreRequest:
            throw SyncProtocolError(.unexpectedMessage, "a \(frame.kind.name) frame is not for a client")
        }
    }

    /// The frame kind, for messages about it.
    public var kind: SyncFrame.Kind {
        switch self {
        case .authOK: return .authOK
        case .chainStatus: return .chainStatus
        case .bundleAck: return .bundleAck
        case .pong: return .pong
        case .household: return .household
        case .restoreBundle: return .restoreBundle
        case .restorePart: return .restorePart
        case .restoreStream: return .restoreStream
        case .restoreState: return .restoreState
        case .error: return .error
        }
    }
}
