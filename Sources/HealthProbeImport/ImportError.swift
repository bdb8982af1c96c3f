import HealthProbeArchive
import HealthProbeCanonical

/// An import failed as a whole. Messages name what is wrong and where, and
/// never contain health values.
public struct ImportError: CodedError {
    public enum Code: String, Sendable {
        case notFound = "not_found"
        case notAnExport = "not_an_export"
        case corruptZip = "corrupt_zip"
        /// A zip member inflated past its declared size or a `ZipLimits` bound.
        case inflateLimit = "inflate_limit"
        case malformedXML = "malformed_xml"
        case io
        case storage
    }
    public let code: Code
    public var codeName: String? { code.rawValue }
    public let message: String
    public let cause: (any Error)?

    public init(_ code: Code, _ message: String, cause: (any Error)? = nil) {
        self.code = code
        self.message = message
        self.cause = cause
    }
}
