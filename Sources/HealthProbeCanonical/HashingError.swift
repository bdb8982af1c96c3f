/// An input could not be hashed canonically.
public struct HashingError: Error, CustomStringConvertible, Sendable {
    public enum Code: String, Sendable { case nonFiniteNumber, invalidDate }
    public let code: Code
    public let message: String
    public var description: String { "\(code.rawValue): \(message)" }
}
