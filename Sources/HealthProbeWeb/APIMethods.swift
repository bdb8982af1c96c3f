import HTTPTypes
import Hummingbird

/// `405 Method Not Allowed` (with `Allow`) for a method an `/api/v1` path does not
/// take, instead of the router's 404: the paths and methods of docs/openapi.json.
struct APIMethods: RouterMiddleware {
    typealias Context = WebContext

    /// Path patterns (`*` is one segment) and their methods.
    static let table: [([Substring], [HTTPRequest.Method])] = [
        ("/api/v1/session", [.post, .delete]), ("/api/v1/me", [.get]), ("/api/v1/overview", [.get]),
        ("/api/v1/chains/*", [.get]), ("/api/v1/chains/*/observations/*", [.get]), ("/api/v1/chains/*/observations/*/visible", [.get]),
        ("/api/v1/chains/*/types/*", [.get]), ("/api/v1/types/*", [.get]), ("/api/v1/chains/*/diff", [.get]), ("/api/v1/chains/*/export", [.get]),
        ("/api/v1/chains/*/shares/*", [.put, .delete]), ("/api/v1/admin/people", [.get, .post]),
        ("/api/v1/admin/people/*", [.delete]), ("/api/v1/admin/people/*/role", [.put]), ("/api/v1/admin/people/*/password", [.put]), ("/api/v1/admin/devices", [.get]),
        ("/api/v1/admin/tokens", [.post]), ("/api/v1/admin/devices/*/revoke", [.post]), ("/api/v1/admin/verify", [.post]),
        ("/api/v1/admin/audit", [.get]), ("/api/v1/chains/*/observations/*/disappeared", [.get]),
        ("/api/v1/alerts", [.get]), ("/api/v1/alerts/*/*/ack", [.post]), ("/api/v1/alerts/*/*/snooze", [.post]),
        ("/api/v1/alerts/channels", [.get, .post]), ("/api/v1/alerts/channels/*", [.delete]),
    ].map { ($0.0.split(separator: "/"), $0.1) }

    static func allowed(_ path: String) -> [HTTPRequest.Method]? {
        let parts = path.split(separator: "/")
        return table.first { pattern, _ in
            pattern.count == parts.count && zip(pattern, parts).allSatisfy { $0 == "*" || $0 == $1 }
        }?.1
    }

    func handle(_ request: Request, context: WebContext, next: (Request, WebContext) async throws -> Response) async throws -> Response {
        let path = request.uri.path
        if path.hasPrefix("/api/"), let methods = Self.allowed(path), !methods.contains(request.method),
           !(request.method == .head && methods.contains(.get)) {
            var r = try Responses.json(Responses.ErrorBody(error: .methodNotAllowed, message: "\(path) takes \(methods.map(\.rawValue).joined(separator: ", "))"),
                                       status: .methodNotAllowed)
            r.headers[.allow] = methods.map(\.rawValue).joined(separator: ", ")
            return r
        }
        return try await next(request, context)
    }
}
