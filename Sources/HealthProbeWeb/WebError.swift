import Hummingbird
import HealthProbeCanonical

/// An error the web layer answers with: a status, a code for tools, a message for
/// people that says what to do. Never carries health values.
public struct WebError: Error, Sendable {
    public enum Code: String, Sendable, Codable {
        case unauthenticated, forbidden, notFound = "not_found", badRequest = "bad_request", csrf, throttled, conflict
        case methodNotAllowed = "method_not_allowed"
    }
    public let code: Code
    public let message: String

    public init(_ code: Code, _ message: String) { self.code = code; self.message = message }

    public var status: HTTPResponse.Status {
        switch code {
        case .unauthenticated: .unauthorized
        case .forbidden, .csrf: .forbidden
        case .notFound: .notFound
        case .badRequest: .badRequest
        case .throttled: .tooManyRequests
        case .conflict: .conflict
        case .methodNotAllowed: .methodNotAllowed
        }
    }

    /// A chain that does not exist and one the person may not read get the same answer,
    /// so ids cannot be probed.
    static let noSuchChain = WebError(.notFound, "no such chain, or it is not shared with you")
}
