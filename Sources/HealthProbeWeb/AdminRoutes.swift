import Foundation
import HealthProbeArchive
import HealthProbeProtocol
import HealthProbeServer
import Hummingbird

/// The admin page: people, devices, enrollment tokens, revocation, verification.
extension WebServer {
    struct PersonForm: Decodable { let csrf: String?; let name: String; let role: String; let password: String }
    struct TokenForm: Decodable { let csrf: String?; let device: String; let person: String }
    struct VerifyForm: Decodable { let csrf: String?; let mode: String }

    func addAdminRoutes(_ router: Router<WebContext>) {
        router.get("/admin") { _, context in
            let admin = try await access.admin(context)
            return try await adminPage(admin, context, token: nil, notice: nil)
        }
        router.post("/admin/people") { request, context in
            let admin = try await access.admin(context)
            let form = try await Forms.decode(PersonForm.self, request)
            try Self.checkCSRF(form.csrf, context)
            try await addPerson(form.name, role: form.role, password: form.password)
            return try await adminPage(admin, context, token: nil, notice: "Added \(form.name).")
        }
        router.post("/admin/people/{person}/role") { request, context in
            struct RoleForm: Decodable { let csrf: String?; let role: String }
            let admin = try await access.admin(context)
            let form = try await Forms.decode(RoleForm.self, request)
            try Self.checkCSRF(form.csrf, context)
            let name = try personParameter(context)
            try await setRole(name, form.role)
            return try await adminPage(admin, context, token: nil, notice: "\(name) is now \(form.role).")
        }
        router.post("/admin/people/{person}/password") { request, context in
            struct PasswordForm: Decodable { let csrf: String?; let password: String }
            let admin = try await access.admin(context)
            let form = try await Forms.decode(PasswordForm.self, request)
            try Self.checkCSRF(form.csrf, context)
            let name = try personParameter(context)
            try await setPassword(name, form.password)
            return try await adminPage(admin, context, token: nil, notice: "Password set for \(name).")
        }
        router.post("/admin/people/{person}/remove") { request, context in
            let admin = try await access.admin(context)
            let form = try await Forms.decode(CSRFForm.self, request)
            try Self.checkCSRF(form.csrf, context)
            let name = try personParameter(context)
            try await removePerson(name)
            return try await adminPage(admin, context, token: nil, notice: "Removed \(name).")
        }
        router.post("/admin/tokens") { request, context in
            let admin = try await access.admin(context)
            let form = try await Forms.decode(TokenForm.self, request)
            try Self.checkCSRF(form.csrf, context)
            let token = try await issueToken(device: form.device, person: form.person)
            return try await adminPage(admin, context, token: token, notice: "Token issued for \(form.device).")
        }
        router.post("/admin/devices/{device}/revoke") { request, context in
            let admin = try await access.admin(context)
            let form = try await Forms.decode(CSRFForm.self, request)
            try Self.checkCSRF(form.csrf, context)
            let device = try deviceParameter(context)
            try await revoke(device)
            return try await adminPage(admin, context, token: nil, notice: "Revoked \(device): it can no longer sync.")
        }
        router.post("/admin/verify") { request, context in
            let admin = try await access.admin(context)
            let form = try await Forms.decode(VerifyForm.self, request)
            try Self.checkCSRF(form.csrf, context)
            let reports = try await verify(mode: form.mode)
            let failed = reports.filter { !$0.ok }.count
            return try await adminPage(admin, context, token: nil,
                                       notice: "Verified \(reports.count) chain(s) (\(form.mode)): \(failed == 0 ? "all passed" : "\(failed) with problems").")
        }
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
        let model = AdminPage.Model(
            csrf: context.sessions.session?.csrf ?? "", people: people,
            devices: devices.map { .init(name: $0.name, state: $0.state, person: $0.person, chains: $0.chains.map { String($0.prefix(12)) }, revocable: $0.revokedAt == nil) },
            chains: chains, roles: People.Role.allCases.map(\.rawValue), personNames: people.filter { $0.role != .viewer }.map(\.name),
            token: token?.text, enrollCommand: token.map { "hp-node enroll \($0.text)" }, notice: notice)
        return pages.render("admin", model, chrome: chrome("Admin", admin, context))
    }

    func personParameter(_ context: WebContext) throws -> String {
        guard let p = context.parameters.get("person"), DeviceName.isValid(p) else { throw WebError(.notFound, "no such person") }
        return p
    }

    func setRole(_ name: String, _ role: String) async throws {
        guard let role = People.Role(rawValue: role) else { throw WebError(.badRequest, "role is admin, member or viewer") }
        let registry = self.registry
        try await blocking { try registry.setRole(person: name, role: role) }
    }

    func setPassword(_ name: String, _ password: String) async throws {
        guard People.passwordLength.contains(password.count) else {
            throw WebError(.badRequest, "passwords are \(People.passwordLength.lowerBound) to \(People.passwordLength.upperBound) characters")
        }
        let registry = self.registry, cost = settings.passwordCost
        try await blocking { try registry.setPassword(person: name, password: password, cost: cost) }
    }

    func removePerson(_ name: String) async throws {
        let registry = self.registry
        try await blocking { try registry.removePerson(name: name) }
    }

    func deviceParameter(_ context: WebContext) throws -> String {
        guard let d = context.parameters.get("device"), DeviceName.isValid(d) else { throw WebError(.notFound, "no such device") }
        return d
    }

    func addPerson(_ name: String, role: String, password: String) async throws {
        guard let role = People.Role(rawValue: role) else { throw WebError(.badRequest, "role is admin, member or viewer") }
        guard People.passwordLength.contains(password.count) else {
            throw WebError(.badRequest, "passwords are \(People.passwordLength.lowerBound) to \(People.passwordLength.upperBound) characters")
        }
        let registry = self.registry, cost = settings.passwordCost
        _ = try await blocking { try registry.addPerson(name: name, role: role, password: password, now: Self.now(), cost: cost) }
    }

    func issueToken(device: String, person: String) async throws -> EnrollmentToken {
        guard DeviceName.isValid(device) else { throw WebError(.badRequest, "device names are 1 to 64 ASCII letters, digits, '.', '_' or '-'") }
        let registry = self.registry, store = self.store, address = settings.syncAddress()
        return try await blocking {
            let pid = try registry.personForEnrollment(person)
            let secret = try registry.issueToken(name: device, person: pid, now: Self.now())
            return EnrollmentToken(address: address, fingerprint: try store.identity().fingerprint, name: device, secret: secret)
        }
    }

    func revoke(_ device: String) async throws {
        let registry = self.registry
        try await blocking { try registry.revoke(name: device, now: Self.now()) }
    }

    func verify(mode: String) async throws -> [ServerVerifier.ChainReport] {
        guard let m = ArchiveVerifier.Mode(rawValue: mode) else { throw WebError(.badRequest, "mode is quick or full") }
        let store = self.store
        return try await blocking { try ServerVerifier.run(store, mode: m) }
    }
}
