import NIOCore

/// A frame a client may send, decoded into its typed message with every field
/// checked (Protocol/README.md sections 3 and 4). Decoding is pure; a frame of a
/// kind only the server sends is `unexpected_message`, a bad payload
/// `malformed_frame` naming the frame and the member.
public enum ClientMessage: Sendable, Equatable {
    case auth(AuthRequest)
    case enroll(EnrollRequest)
    case chainStatusRequest(ChainStatusRequest)
    case householdRequest(HouseholdRequest)
    case bundleBegin(BundleBegin)
    case bundlePart(BundlePart)
    case bundleEnd(BundleEnd)
    /// Version 3: a streamed bundle opens, and closes with what it declares.
    case bundleStreamBegin(BundleStreamBegin)
    case bundleStreamEnd(BundleBegin)
    case restoreRequest(RestoreRequest)
    case ping

    public init(_ frame: SyncFrame) throws {
        switch frame.kind {
        case .auth: self = .auth(try AuthRequest(frame))
        case .enroll: self = .enroll(try EnrollRequest(frame))
        case .chainStatusRequest: self = .chainStatusRequest(try ChainStatusRequest(frame))
        case .householdRequest: self = .householdRequest(try HouseholdRequest(frame))
        case .bundleBegin: self = .bundleBegin(try BundleBegin(frame))
        case .bundlePart: self = .bundlePart(try BundlePart(frame))
        case .bundleEnd: self = .bundleEnd(try BundleEnd(frame))
        case .bundleStreamBegin: self = .bundleStreamBegin(try BundleStreamBegin(frame))
        case .bundleStreamEnd: self = .bundleStreamEnd(try BundleBegin(frame))
        case .restoreRequest: self = .restoreRequest(try RestoreRequest(frame))
        case .ping:
            guard frame.payload.readableBytes == 0 else {
                throw SyncProtocolError(.malformedFrame, "PING: the payload must be empty (it holds \(frame.payload.readableBytes) bytes)")
            }
            self = .ping
        case .authOK, .chainStatus, .bundleAck, .pong, .household, .restoreBundle, .restorePart, .restoreState, .restoreStream, .error:
            throw SyncProtocolError(.unexpectedMessage, "a \(frame.kind) frame is not for the server")
        }
    }

    /// The frame kind, for messages about it.
    public var kind: SyncFrame.Kind {
        switch self {
        case .auth: return .auth
        case .enroll: return .enroll
        case .chainStatusRequest: return .chainStatusRequest
        case .householdRequest: return .householdRequest
        case .bundleBegin: return .bundleBegin
        case .bundlePart: return .bundlePart
        case .bundleEnd: return .bundleEnd
        case .bundleStreamBegin: return .bundleStreamBegin
        case .bundleStreamEnd: return .bundleStreamEnd
        case .restoreRequest: return .restoreRequest
        case .ping: return .ping
        }
    }
}

/// `BUNDLE_PART` (and `RESTORE_PART`, the same from the server): `index u32 BE | uncompressed_size u32 BE | zlib bytes`.
public struct BundlePart: Sendable, Equatable {
    public var index: Int
    public var declaredSize: Int
    /// The zlib stream (a view of the frame's buffer, not a copy).
    public var compressed: ByteBuffer

    public init(_ frame: SyncFrame) throws {
        var p = frame.payload
        guard let index: UInt32 = p.readInteger(endianness: .big), let size: UInt32 = p.readInteger(endianness: .big) else {
            throw SyncProtocolError(.malformedFrame, "\(frame.kind.name): the payload is shorter than its 8-byte header")
        }
        self.index = Int(index)
        declaredSize = Int(size)
        compressed = p
    }
}
