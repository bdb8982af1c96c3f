import NIOCore

/// One frame after the hello: `length u32 BE | type u8 | payload`.
public struct SyncFrame: Equatable, Sendable {
    public enum Kind: UInt8, Sendable, CaseIterable {
        case auth = 0x08
        case authOK = 0x09
        case enroll = 0x0A
        case chainStatusRequest = 0x10
        case chainStatus = 0x11
        case bundleBegin = 0x20
        case bundlePart = 0x21
        case bundleEnd = 0x22
        case bundleAck = 0x23
        case bundleStreamBegin = 0x24
        case bundleStreamEnd = 0x25
        case ping = 0x30
        case pong = 0x31
        case householdRequest = 0x40
        case household = 0x41
        case restoreRequest = 0x50
        case restoreBundle = 0x51
        case restorePart = 0x52
        case restoreState = 0x53
        case restoreStream = 0x54
        case error = 0x7F

        /// The name Protocol/README.md gives the kind (`BUNDLE_ACK`).
        public var name: String {
            switch self {
            case .auth: return "AUTH"
            case .authOK: return "AUTH_OK"
            case .enroll: return "ENROLL"
            case .chainStatusRequest: return "CHAIN_STATUS_REQUEST"
            case .chainStatus: return "CHAIN_STATUS"
            case .bundleBegin: return "BUNDLE_BEGIN"
            case .bundlePart: return "BUNDLE_PART"
            case .bundleEnd: return "BUNDLE_END"
            case .bundleAck: return "BUNDLE_ACK"
            case .bundleStreamBegin: return "BUNDLE_STREAM_BEGIN"
            case .bundleStreamEnd: return "BUNDLE_STREAM_END"
            case .ping: return "PING"
            case .pong: return "PONG"
            case .householdRequest: return "HOUSEHOLD_REQUEST"
            case .household: return "HOUSEHOLD"
            case .restoreRequest: return "RESTORE_REQUEST"
            case .restoreBundle: return "RESTORE_BUNDLE"
            case .restorePart: return "RESTORE_PART"
            case .restoreState: return "RESTORE_STATE"
            case .restoreStream: return "RESTORE_STREAM"
            case .error: return "ERROR"
            }
        }
    }

    public var kind: Kind
    public var payload: ByteBuffer

    public init(kind: Kind, payload: ByteBuffer) {
        self.kind = kind
        self.payload = payload
    }

    /// Maximum value of the length field (type byte + payload): 16 MiB.
    public static let maxLength = 16 * 1024 * 1024
}

/// The eight-byte hello: `"HPSY" | version u16 BE | flags u16 BE`.
public struct SyncHello: Equatable, Sendable {
    public static let magic: [UInt8] = [0x48, 0x50, 0x53, 0x59]
    /// The version a client sends unless it needs a later one: 1 has everything but restore.
    public static let currentVersion: UInt16 = 1
    /// The version that adds restore (`RESTORE_REQUEST`, section 8).
    public static let restoreVersion: UInt16 = 2
    /// The version that adds streamed bundles (`BUNDLE_STREAM_BEGIN`, `BUNDLE_STREAM_END`, section 3.1)
    /// and restores whose chain state follows the parts (`RESTORE_STREAM`, `RESTORE_STATE`, section 8.4).
    public static let streamVersion: UInt16 = 3
    /// The version whose sessions carry bundles of format 2 (Protocol/bundles.md: `new_sample` items).
    public static let bundleFormatVersion: UInt16 = 4
    /// The versions this build speaks; a server answers with the client's.
    public static let versions: ClosedRange<UInt16> = 1...4
    public var version: UInt16
    public var flags: UInt16

    public init(version: UInt16 = SyncHello.currentVersion, flags: UInt16 = 0) {
        self.version = version
        self.flags = flags
    }

    public func write(to buffer: inout ByteBuffer) {
        buffer.writeBytes(Self.magic)
        buffer.writeInteger(version, endianness: .big)
        buffer.writeInteger(flags, endianness: .big)
    }
}
