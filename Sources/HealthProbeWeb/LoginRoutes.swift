import Foundation
import HealthProbeProtocol
import HealthProbeServer
import HTTPTypes
import Hummingbird
import HummingbirdAuth

/// Sign-in and sign-out, for the pages (forms) and the API (JSON).
extension WebServer {
    struct LoginForm: Decodable { let name: String; let password: String; var next: String? = nil }
    struct CSRFForm: Decodable { let csrf: String? }
    struct SessionBody: Encodable { let person: String; let role: String; let csrfToken: String }

    func addLoginRoutes(_ router: Router<WebContext>) {
        router.get("/login") { request, context in
            let next = try Params.query(request, "next", max: 2048).flatMap(LoginNext.safe)
            if context.sessions.session != nil { return Responses.redirect(next ?? "/") }
            return pages.render("login", LoginPage.Model(error: nil, name: nil, next: next),
                                chrome: Chrome(title: "Sign in", signedInAs: nil, role: nil, isAdmin: false, csrf: nil))
        }
        router.post("/login") { request, context in
            let form = try await Forms.decode(LoginForm.self, request)
            let next = form.next.flatMap(LoginNext.safe)
            guard try await signIn(form.name, form.password, context) != nil else {
                return pages.render("login", LoginPage.Model(error: "Wrong name or password.", name: String(form.name.prefix(64)), next: next),
                                    chrome: Chrome(title: "Sign in", signedInAs: nil, role: nil, isAdmin: false, csrf: nil), status: .unauthorized)
            }
            return Responses.redirect(next ?? "/")
        }
        router.post("/logout") { request, context in
            let form = try await Forms.decode(CSRFForm.self, request)
            try Self.checkCSRF(form.csrf, context)
            context.sessions.clearSession()
            return Responses.redirect("/login")
        }
        router.post("/api/v1/session") { request, context in
            let body = try await Forms.json(LoginForm.self, request)
            guard let person = try await signIn(body.name, body.password, context), let session = context.sessions.session else {
                throw WebError(.unauthenticated, "wrong name or password")
            }
            return try Responses.json(SessionBody(person: person.name, role: person.role.rawValue, csrfToken: session.csrf), status: .created)
        }
        router.delete("/api/v1/session") { request, context in
            _ = try await access.person(context)
            try Self.checkCSRF(request.headers[HTTPField.Name("X-CSRF-Token")!], context)
            context.sessions.clearSession()
            return Response(status: .noContent)
        }
    }

    /// Checks a name and password (bcrypt, off the cooperative threads), one attempt at a
    /// time per name and per peer, slower after each failure (`LoginThrottle`); on success
    /// starts a new session (a new id: no fixation).
    func signIn(_ name: String, _ password: String, _ context: WebContext) async throws -> People.Person? {
        let peer = context.remoteAddress?.ipAddress ?? "unknown"
        let key = String(name.prefix(64))
        let registry = self.registry
        let valid = DeviceName.isValid(name) && People.passwordLength.contains(password.count)
        let answer = try await throttle.turn(peer: peer, name: key, now: { Self.now() }) { () async throws -> People.Person? in
            guard valid else { return nil }
            return try await blocking { try registry.checkPassword(name: name, password: password) }
        }
        guard let answer else {
            logger.notice("sign-in refused: too many attempts waiting", metadata: ["peer": "\(peer)"])
            throw WebError(.throttled, "too many sign-in attempts are waiting for this name or address; try again in a minute")
        }
        guard let person = answer else {
            logger.notice("sign-in refused", metadata: ["peer": "\(peer)"])
            return nil
        }
        context.sessions.createSession(WebSession(personID: person.id, csrf: EnrollmentToken.randomSecret(), signedInAt: Self.now()), expiresIn: settings.sessionLifetime)
        logger.info("signed in", metadata: ["person": "\(person.name)"])
        return person
    }
}
