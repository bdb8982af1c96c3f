/// An error with a stable code, a message that says what is wrong and how to
/// fix it, and an optional underlying cause.
public protocol CodedError: Error, CustomStringConvertible, Sendable {
    var message: String { get }
    var cause: (any Error)? { get }
    /// The stable code tools match on (`not_found`, `unauthorized`...), when the error has one.
    var codeName: String? { get }
}

extension CodedError {
    public var codeName: String? { nil }

    public var description: String {
        if let cause { return "\(message) (cause: \(cause))" }
        return message
    }
}
