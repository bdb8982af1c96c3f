import Foundation
import HealthProbeArchive
import HealthProbeProtocol
import HealthProbeServer
import Hummingbird

/// The admin page: people, devices, enrollment tokens, revocation, verification.
extension WebServer {
    struct PersonForm: Decodable { let csrf: String?; let name: String; let role: String; let password: String }
    struct TokenForm: Decodable { let csrf: String?; let device: String; let person: String? }
    struct VerifyForm: Decodable { let csrf: String?; let mode: String }
    /// A change that asks first: `confirm=yes` carries it out.
    struct ConfirmedForm: Decodable { let csrf: String?; let confirm: String?; let role: String? }

    /// Every admin form posts, then redirects to the page (post-redirect-get): a reload
    /// never repeats a change. What the change said waits in the session's flash.
    func addAdminRoutes(_ router: Router<WebContext>) {
        router.get("/admin") { _, context in
            let admin = try await access.admin(context)
            let shown = await flash.take(context.sessions.session?.csrf)
            return try await adminPage(admin, context, token: shown?.token, notice: shown?.notice)
        }
        router.post("/admin/people") { request, context in
            let admin = try await access.admin(context)
            let form = try await Forms.decode(PersonForm.self, request)
            try Self.checkCSRF(form.csrf, context)
            try await addPerson(form.name, role: form.role, password: form.password, by: .init(name: admin.name, via: .web))
            return await done(context, "Added \(form.name).")
        }
        router.post("/admin/people/{person}/role") { request, context in
            let admin = try await access.admin(context)
            let form = try await Forms.decode(ConfirmedForm.self, request)
            try Self.checkCSRF(form.csrf, context)
            let name = try personParameter(context)
            guard let roleText = form.role, let role = People.Role(rawValue: roleText) else {
                throw WebError(.badRequest, "role is admin, member or viewer")
            }
            let registry = self.registry
            guard let current = try await blocking({ try registry.person(named: name) }) else { throw WebError(.notFound, "no person named \(name)") }
            if current.role == role { return await done(context, "\(name) is already \(role.rawValue); nothing changed.") }
            // Giving or taking admin asks first.
            if (current.role == .admin || role == .admin) && form.confirm != "yes" {
                return confirmPage(admin, context, heading: "Make \(name) \(role.rawValue)?",
                                   message: role == .admin
                                       ? "\(name) will read every person's history and manage people, devices and sharing. Their sessions end; they sign in again."
                                       : "\(name) will no longer be an admin. Their sessions end; they sign in again.",
                                   action: "/admin/people/\(name)/role", fields: [("role", role.rawValue)], button: "Make \(name) \(role.rawValue)")
            }
            try await setRole(name, role.rawValue, by: .init(name: admin.name, via: .web))
            return await done(context, "\(name) is now \(role.rawValue); their sessions ended.")
        }
        router.post("/admin/people/{person}/password") { request, context in
            struct PasswordForm: Decodable { let csrf: String?; let password: String }
            let admin = try await access.admin(context)
            let form = try await Forms.decode(PasswordForm.self, request)
            try Self.checkCSRF(form.csrf, context)
            let name = try personParameter(context)
            try await setPassword(name, form.password, by: .init(name: admin.name, via: .web))
            return await done(context, "Password set for \(name); every session of theirs ended.")
        }
        router.post("/admin/people/{person}/remove") { request, context in
            let admin = try await access.admin(context)
            let form = try await Forms.decode(ConfirmedForm.self, request)
            try Self.checkCSRF(form.csrf, context)
            let name = try personParameter(context)
            guard form.confirm == "yes" else {
                let registry = self.registry
                guard let person = try await blocking({ try registry.person(named: name) }) else { throw WebError(.notFound, "no person named \(name)") }
                // Nothing to confirm when the registry would refuse anyway.
                guard person.devices.isEmpty else {
                    throw WebError(.conflict, "\(name) still has devices (\(person.devices.joined(separator: ", "))); give them to another person first with `hp-server person give DEVICE --to PERSON`")
                }
                return confirmPage(admin, context, heading: "Remove \(name)?",
                                   message: "\(name) can no longer sign in, and the chains shared with them are no longer shared. Their devices' history stays.",
                                   action: "/admin/people/\(name)/remove", fields: [], button: "Remove \(name)")
            }
            try await removePerson(name, by: .init(name: admin.name, via: .web))
            return await done(context, "Removed \(name).")
        }
        router.post("/admin/tokens") { request, context in
            let admin = try await access.admin(context)
            let form = try await Forms.decode(TokenForm.self, request)
            try Self.checkCSRF(form.csrf, context)
            guard let person = form.person, !person.isEmpty else {
                throw WebError(.badRequest, "choose the person whose device this is; a token is issued for one person's device")
            }
            let token = try await issueToken(device: form.device, person: person, by: .init(name: admin.name, via: .web))
            await flash.put(context.sessions.session?.csrf, .init(notice: "Token issued for \(form.device) (\(person)'s device).", token: token))
            return Responses.redirect("/admin")
        }
        router.post("/admin/devices/{device}/revoke") { request, context in
            let admin = try await access.admin(context)
            let form = try await Forms.decode(ConfirmedForm.self, request)
            try Self.checkCSRF(form.csrf, context)
            let device = try deviceParameter(context)
            guard form.confirm == "yes" else {
                let registry = self.registry
                guard try await blocking({ try registry.devices().contains { $0.name == device } }) else { throw WebError(.notFound, "no device named \(device)") }
                return confirmPage(admin, context, heading: "Revoke \(device)?",
                                   message: "\(device) can no longer sync, at once and for good (a new name and token enroll it again). Its history stays on this server.",
                                   action: "/admin/devices/\(device)/revoke", fields: [], button: "Revoke \(device)")
            }
            try await revoke(device, by: .init(name: admin.name, via: .web))
            return await done(context, "Revoked \(device): it can no longer sync.")
        }
        router.post("/admin/verify") { request, context in
            let admin = try await access.admin(context)
            let form = try await Forms.decode(VerifyForm.self, request)
            try Self.checkCSRF(form.csrf, context)
            let reports = try await verify(mode: form.mode, by: .init(name: admin.name, via: .web))
            let failed = reports.filter { !$0.ok }.count
            return await done(context, "Verified \(reports.count) chain(s) (\(form.mode)): \(failed == 0 ? "all passed" : "\(failed) with problems").")
        }
    }

    /// After a change: the notice for the next view of the page, and the redirect there.
    func done(_ context: WebContext, _ notice: String) async -> Response {
        await flash.put(context.sessions.session?.csrf, .init(notice: notice, token: nil))
        return Responses.redirect("/admin")
    }

    /// The question before a change that is hard to undo: the same form again, with `confirm=yes`.
    func confirmPage(_ admin: People.Person, _ context: WebContext, heading: String, message: String, action: String,
                     fields: [(String, String)], button: String) -> Response {
        pages.render("confirm", ConfirmPage.Model(heading: heading, message: message, action: action, csrf: context.sessions.session?.csrf ?? "",
                                                  fields: fields.map { .init(name: $0.0, value: $0.1) }, button: button),
                     chrome: chrome(heading, admin, context))
    }

    func adminPage(_ admin: People.Person, _ context: WebContext, token: EnrollmentToken?, notice: String?) async throws -> Response {
        let registry = self.registry, store = self.store
        let (people, devices, chains) = try await blocking {
            let chains = try store.chains().map { c in
                let storage = try? store.readReplica(c, ArchiveCompaction.Storage.read)
                return AdminPage.ChainRow(chain: c, chainShort: String(c.prefix(12)), verification: try registry.verification(chain: c).map {
                    .init(checkedAt: $0.checkedAt.isFinite ? DashboardQueries.text($0.checkedAt)! : "", mode: $0.mode, ok: $0.ok, problems: $0.problems)
                }, storage: storage.map(AdminPage.storageText), compactable: storage?.worthCompacting ?? false)
            }
            return (try registry.people(), try registry.devices(), chains)
        }
        let audit = try await blocking { try registry.audit(limit: 20) }.map { e in
            AdminPage.AuditRow(at: DashboardQueries.text(e.at) ?? "", actor: e.actor, via: e.via.rawValue, action: e.action.rawValue,
                               target: e.shownTarget, detail: e.detail)
        }
        let model = AdminPage.Model(
            csrf: context.sessions.session?.csrf ?? "",
            people: people.map { p in .init(name: p.name, person: p, roles: People.Role.allCases.map { .init(value: $0.rawValue, selected: $0 == p.role) }) },
            devices: devices.map { .init(name: $0.name, state: $0.state.label, advice: AdminPage.adviceParts($0.advice), person: $0.person,
                                         chains: $0.shownChains, revocable: $0.revokedAt == nil) },
            chains: chains, roles: People.Role.allCases.map(\.rawValue), personNames: people.filter { $0.role != .viewer }.map(\.name),
            token: token?.text, enrollCommand: token.map { "hp-node enroll \($0.text)" }, notice: notice, audit: audit)
        var response = pages.render("admin", model, chrome: chrome("Admin", admin, context))
        // The page may carry a one-time enrollment token: never kept by a cache.
        response.headers[.cacheControl] = "no-store"
        return response
    }

    func personParameter(_ context: WebContext) throws -> String {
        guard let p = context.parameters.get("person"), DeviceName.isValid(p) else { throw WebError(.notFound, "no such person") }
        return p
    }

    func setRole(_ name: String, _ role: String, by actor: Audit.Actor) async throws {
        guard let role = People.Role(rawValue: role) else { throw WebError(.badRequest, "role is admin, member or viewer") }
        let registry = self.registry
        try await blocking { try registry.setRole(person: name, role: role, by: actor) }
    }

    func setPassword(_ name: String, _ password: String, by actor: Audit.Actor) async throws {
        guard People.passwordLength.contains(password.count) else {
            throw WebError(.badRequest, "passwords are \(People.passwordLength.lowerBound) to \(People.passwordLength.upperBound) characters")
        }
        let registry = self.registry, cost = settings.passwordCost
        try await blocking { try registry.setPassword(person: name, password: password, cost: cost, by: actor) }
    }

    func removePerson(_ name: String, by actor: Audit.Actor) async throws {
        let registry = self.registry
        try await blocking { try registry.removePerson(name: name, by: actor) }
    }

    func deviceParameter(_ context: WebContext) throws -> String {
        guard let d = context.parameters.get("device"), DeviceName.isValid(d) else { throw WebError(.notFound, "no such device") }
        return d
    }

    func addPerson(_ name: String, role: String, password: String, by actor: Audit.Actor) async throws {
        guard let role = People.Role(rawValue: role) else { throw WebError(.badRequest, "role is admin, member or viewer") }
        guard People.passwordLength.contains(password.count) else {
            throw WebError(.badRequest, "passwords are \(People.passwordLength.lowerBound) to \(People.passwordLength.upperBound) characters")
        }
        let registry = self.registry, cost = settings.passwordCost
        _ = try await blocking { try registry.addPerson(name: name, role: role, password: password, now: Self.now(), cost: cost, by: actor) }
    }

    func issueToken(device: String, person: String, by actor: Audit.Actor) async throws -> EnrollmentToken {
        guard DeviceName.isValid(device) else { throw WebError(.badRequest, "device names are 1 to 64 ASCII letters, digits, '.', '_' or '-'") }
        let registry = self.registry, store = self.store, address = settings.syncAddress()
        return try await blocking {
            let pid = try registry.personForEnrollment(person)
            let secret = try registry.issueToken(name: device, person: pid, now: Self.now(), by: actor)
            return EnrollmentToken(address: address, fingerprint: try store.identity().fingerprint, name: device, secret: secret)
        }
    }

    func revoke(_ device: String, by actor: Audit.Actor) async throws {
        let registry = self.registry
        try await blocking { try registry.revoke(name: device, now: Self.now(), by: actor) }
    }

    func verify(mode: String, by actor: Audit.Actor) async throws -> [ServerVerifier.ChainReport] {
        guard let m = ArchiveVerifier.Mode(rawValue: mode) else { throw WebError(.badRequest, "mode is quick or full") }
        let store = self.store, registry = self.registry
        return try await blocking {
            let reports = try ServerVerifier.run(store, mode: m)
            try registry.recordAudit(actor, .verify, target: nil,
                                     detail: "\(m.rawValue): \(reports.count) chain(s), \(reports.filter { !$0.ok }.count) with problems")
            return reports
        }
    }
}
