import HealthProbeCanonical

/// An archive operation failed. `code` is stable for tools; `message` says
/// what is wrong, where, and how to fix it; `cause` is the underlying error.
/// Messages never contain health values.
public struct ArchiveError: CodedError {
    public enum Code: String, Sendable {
        case newerSchema = "newer_schema"
        case migrationFailed = "migration_failed"
        case notAnArchive = "not_an_archive"
        case locked
        case keyDirectory = "key_directory"
        case invalidState = "invalid_state"
        case pageConflict = "page_conflict"
        case invalidInput = "invalid_input"
        case notFound = "not_found"
        case storage
        case cancelled
        case confirmationRequired = "confirmation_required"
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
