import Foundation
import Hummingbird
import HealthProbeArchive
import HealthProbeCanonical
import HealthProbeServer
import Logging

/// Turns every failure into an answer: JSON `{error, message}` under `/api/`, a page
/// elsewhere (signing in first for a browser without a session). Unexpected errors are
/// logged by type only (never values) and answered 500 without detail.
struct WebErrors: RouterMiddleware {
    typealias Context = WebContext
    let pages: Pages

    func handle(_ request: Request, context: WebContext, next: (Request, WebContext) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as WebError {
            return answer(error, request)
        } catch let error as DeviceRegistry.AuthError {
            let code: WebError.Code = switch error.code {
            case .unauthorized: .unauthenticated
            case .forbidden: .forbidden
            case .invalidName: .badRequest
            case .duplicate, .conflict: .conflict
            case .notFound: .notFound
            }
            return answer(WebError(code, error.message), request)
        } catch let error as ArchiveError where error.code == .notFound {
            return answer(WebError(.notFound, error.message), request)
        } catch let error as HTTPError where error.status == .notFound {
            return answer(WebError(.notFound, "no such page"), request)
        } catch {
            context.logger.error("request failed", metadata: ["path": "\(request.uri.path)", "error_type": "\(type(of: error))"])
            return answer(WebError(.badRequest, "the server could not answer this request; an admin can read its log"), request, status: .internalServerError)
        }
    }

    func answer(_ error: WebError, _ request: Request, status: HTTPResponse.Status? = nil) -> Response {
        if request.uri.path.hasPrefix("/api/") {
            var r = (try? Responses.json(Responses.ErrorBody(error: error.code, message: error.message), status: status ?? error.status))
                ?? Response(status: .internalServerError)
            if error.code == .unauthenticated { r.headers[.wwwAuthenticate] = "Session realm=\"HealthProbe\"" }
            return r
        }
        if error.code == .unauthenticated && request.method == .get { return Responses.redirect("/login") }
        return pages.render("message", MessagePage.Model(heading: heading(error.code), message: error.message, back: "/"),
                            chrome: Chrome(title: heading(error.code), signedInAs: nil, role: nil, isAdmin: false, csrf: nil),
                            status: status ?? error.status)
    }

    func heading(_ code: WebError.Code) -> String {
        switch code {
        case .unauthenticated: "Sign in first"
        case .forbidden: "Not allowed"
        case .notFound: "Not found"
        case .badRequest: "Cannot do that"
        case .csrf: "Refused"
        case .throttled: "Too many attempts"
        case .conflict: "Already there"
        case .methodNotAllowed: "Not this way"
        }
    }
}
