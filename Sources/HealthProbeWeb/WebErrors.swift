import Foundation
import Hummingbird
import HealthProbeArchive
import HealthProbeCanonical
import HealthProbeServer
import Logging

/// Turns every failure into an answer: JSON `{error, message}` under `/api/`, a page
/// elsewhere (signing in first for a browser without a session). Unexpected errors are
/// logged by type only (never values) and answered 500 without detail.
///
/// Two are installed: the outer one answers what the middleware before the session fails
/// with; the inner one, after the session middleware, knows who is signed in (`access`), so
/// an error page keeps the navigation. A browser sent to sign in comes back to the page it
/// asked for (`/login?next=`).
struct WebErrors: RouterMiddleware {
    typealias Context = WebContext
    let pages: Pages
    var access: Access? = nil

    func handle(_ request: Request, context: WebContext, next: (Request, WebContext) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as WebError {
            return await answer(error, request, context)
        } catch let error as DeviceRegistry.AuthError {
            let code: WebError.Code = switch error.code {
            case .unauthorized: .unauthenticated
            case .forbidden: .forbidden
            case .invalidName: .badRequest
            case .duplicate, .conflict: .conflict
            case .notFound: .notFound
            }
            return await answer(WebError(code, error.message), request, context)
        } catch let error as ArchiveError where error.code == .notFound {
            return await answer(WebError(.notFound, error.message), request, context)
        } catch let error as HTTPError where error.status == .notFound {
            return await answer(WebError(.notFound, "no such page"), request, context)
        } catch {
            context.logger.error("request failed", metadata: ["path": "\(request.uri.path)", "error_type": "\(type(of: error))"])
            return await answer(WebError(.badRequest, "the server could not answer this request; an admin can read its log"), request, context, status: .internalServerError)
        }
    }

    func answer(_ error: WebError, _ request: Request, _ context: WebContext, status: HTTPResponse.Status? = nil) async -> Response {
        if request.uri.path.hasPrefix("/api/") {
            var r = (try? Responses.json(Responses.ErrorBody(error: error.code, message: error.message), status: status ?? error.status))
                ?? Response(status: .internalServerError)
            if error.code == .unauthenticated { r.headers[.wwwAuthenticate] = "Session realm=\"HealthProbe\"" }
            return r
        }
        if error.code == .unauthenticated && request.method == .get {
            let asked = request.uri.path + (request.uri.query.map { "?" + $0 } ?? "")
            guard asked != "/", let next = LoginNext.safe(asked) else { return Responses.redirect("/login") }
            return Responses.redirect("/login?next=" + LoginNext.encode(next))
        }
        var chrome = Chrome(title: heading(error.code), signedInAs: nil, role: nil, isAdmin: false, csrf: nil)
        if error.code != .unauthenticated, let access, let person = try? await access.person(context) {
            chrome = Chrome(title: heading(error.code), signedInAs: person.name, role: person.role.rawValue, isAdmin: person.role == .admin,
                            csrf: context.sessions.session?.csrf)
        }
        return pages.render("message", MessagePage.Model(heading: heading(error.code), message: error.message, back: "/"),
                            chrome: chrome, status: status ?? error.status)
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
