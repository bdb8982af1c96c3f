import HealthProbeCanonical

/// A protocol violation or refusal, with the `ERROR` frame code it maps to
/// (Protocol/README.md section 5).
public struct SyncProtocolError: CodedError, Equatable {
    public enum Code: String, Sendable, Codable {
        case badMagic = "bad_magic"
        case protocolVersion = "protocol_version"
        case frameTooLarge = "frame_too_large"
        case malformedFrame = "malformed_frame"
        case unexpectedMessage = "unexpected_message"
        case inflateLimit = "inflate_limit"
        case bundleInvalid = "bundle_invalid"
        case outOfOrder = "out_of_order"
        case divergence
        case storage
        case busy
        /// No hello, or no frame while the server waited for one, within the limit.
        case timeout
        /// No or a wrong credential, a used or expired enrollment token, or a revoked device.
        case unauthorized
        /// An authenticated device asked for a chain another device owns.
        case forbidden
        /// A restore asked for a bundle the server does not hold (section 8).
        case notFound = "not_found"

        /// Whether the client may retry after this error. A bundle refused for its
        /// content (`bundle_invalid`) is refused again if sent again: not retryable.
        public var retryable: Bool {
            switch self {
            case .outOfOrder, .storage, .busy, .timeout: return true
            default: return false
            }
        }
    }
    public let code: Code
    public var codeName: String? { code.rawValue }
    public let message: String
    public var cause: (any Error)? { nil }

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public static func == (a: SyncProtocolError, b: SyncProtocolError) -> Bool { a.code == b.code }
}
