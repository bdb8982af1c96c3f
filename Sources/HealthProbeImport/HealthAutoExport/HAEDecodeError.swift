import HealthProbeCanonical

/// A Health Auto Export body was refused. The message names the JSON path
/// (`data.metrics[3].data[17].date`) and what was expected, never a value.
public struct HAEDecodeError: CodedError, Equatable {
    /// Where in the document, as a JSON path from the root.
    public let path: String
    /// What was wrong there and how to fix it.
    public let reason: String

    public init(_ path: String, _ reason: String) {
        self.path = path
        self.reason = reason
    }

    public var message: String { "Health Auto Export payload refused at \(path): \(reason)" }
    public var cause: (any Error)? { nil }
}
