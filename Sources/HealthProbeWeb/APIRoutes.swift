import Foundation
import HealthProbeArchive
import HealthProbeProtocol
import HealthProbeServer
import HTTPTypes
import Hummingbird

/// `/api/v1`: what the pages show, as JSON (snake_case keys), with the same
/// authorization; changes need the `X-CSRF-Token` header from `POST /api/v1/session`.
/// Described by docs/openapi.json.
extension WebServer {
    struct Me: Encodable { let name: String; let role: String; let devices: [String] }
    struct PersonBody: Decodable { let name: String; let role: String; let password: String }
    struct TokenBody: Decodable { let device: String; let person: String }
    struct TokenReply: Encodable { let device: String; let token: String; let command: String }
    struct VerifyBody: Decodable { let mode: String }
    struct ShareReply: Encodable { let chain: String; let sharedWith: [String] }

    func addAPIRoutes(_ router: Router<WebContext>) {
        let api = router.group("/api/v1")
        api.get("/me") { _, context in
            let p = try await access.person(context)
            return try Responses.json(Me(name: p.name, role: p.role.rawValue, devices: p.devices))
        }
        api.get("/overview") { _, context in
            try Responses.json(try await overview(try await access.person(context)))
        }
        api.get("/chains/{chain}") { request, context in
            let person = try await access.person(context)
            let chain = try await access.chain(context, for: person)
            let after = try Params.queryID(request, "after")
            let q = queries
            var page = try await blocking { try q.chainPage(chain, after: after) }
            page.card = ChainGlance.apply(page.card, now: Self.now())
            return try Responses.json(page)
        }
        api.get("/chains/{chain}/observations/{observation}") { _, context in
            let person = try await access.person(context)
            let chain = try await access.chain(context, for: person)
            let id = try Params.id(context, "observation")
            let q = queries
            return try Responses.json(try await blocking { try q.observation(chain, id: id) })
        }
        api.get("/chains/{chain}/observations/{observation}/disappeared") { request, context in
            try Responses.json(try await disappearedPage(request, context, try await access.person(context)))
        }
        api.get("/chains/{chain}/observations/{observation}/visible") { request, context in
            try Responses.json(try await visiblePage(request, context, try await access.person(context)))
        }
        api.get("/chains/{chain}/types/{type}") { request, context in
            try Responses.json(try await chainSeries(request, context, try await access.person(context)).series)
        }
        api.get("/types/{type}") { request, context in
            let person = try await access.person(context)
            let type = try Params.typeIdentifier(context.parameters.get("type"))
            return try Responses.json(try await across(person, type: type, range: try Params.chartRange(request)))
        }
        api.get("/chains/{chain}/diff") { request, context in
            try Responses.json(try await diffPage(request, context, try await access.person(context)).page)
        }
        api.put("/chains/{chain}/shares/{person}") { request, context in
            try await shareRoute(request, context, share: true)
        }
        api.delete("/chains/{chain}/shares/{person}") { request, context in
            try await shareRoute(request, context, share: false)
        }
        api.get("/admin/people") { _, context in
            _ = try await access.admin(context)
            let registry = self.registry
            return try Responses.json(try await blocking { try registry.people() })
        }
        api.post("/admin/people") { request, context in
            let admin = try await access.admin(context)
            try Self.checkCSRF(request.headers[HTTPField.Name("X-CSRF-Token")!], context)
            let body = try await Forms.json(PersonBody.self, request)
            try await addPerson(body.name, role: body.role, password: body.password, by: .init(name: admin.name, via: .api))
            let registry = self.registry
            return try Responses.json(try await blocking { try registry.person(named: body.name) }, status: .created)
        }
        api.put("/admin/people/{person}/role") { request, context in
            struct RoleBody: Decodable { let role: String }
            let admin = try await access.admin(context)
            try Self.checkCSRF(request.headers[HTTPField.Name("X-CSRF-Token")!], context)
            let body = try await Forms.json(RoleBody.self, request)
            let name = try personParameter(context)
            try await setRole(name, body.role, by: .init(name: admin.name, via: .api))
            let registry = self.registry
            return try Responses.json(try await blocking { try registry.person(named: name) })
        }
        api.put("/admin/people/{person}/password") { request, context in
            struct PasswordBody: Decodable { let password: String }
            let admin = try await access.admin(context)
            try Self.checkCSRF(request.headers[HTTPField.Name("X-CSRF-Token")!], context)
            let body = try await Forms.json(PasswordBody.self, request)
            try await setPassword(try personParameter(context), body.password, by: .init(name: admin.name, via: .api))
            return Response(status: .noContent)
        }
        api.delete("/admin/people/{person}") { request, context in
            let admin = try await access.admin(context)
            try Self.checkCSRF(request.headers[HTTPField.Name("X-CSRF-Token")!], context)
            try await removePerson(try personParameter(context), by: .init(name: admin.name, via: .api))
            return Response(status: .noContent)
        }
        api.get("/admin/devices") { _, context in
            _ = try await access.admin(context)
            let registry = self.registry
            return try Responses.json(try await blocking { try registry.devices() })
        }
        api.post("/admin/tokens") { request, context in
            let admin = try await access.admin(context)
            try Self.checkCSRF(request.headers[HTTPField.Name("X-CSRF-Token")!], context)
            let body = try await Forms.json(TokenBody.self, request)
            let token = try await issueToken(device: body.device, person: body.person, by: .init(name: admin.name, via: .api))
            return try Responses.json(TokenReply(device: body.device, token: token.text, command: "hp-node enroll \(token.text)"), status: .created)
        }
        api.post("/admin/devices/{device}/revoke") { request, context in
            let admin = try await access.admin(context)
            try Self.checkCSRF(request.headers[HTTPField.Name("X-CSRF-Token")!], context)
            try await revoke(try deviceParameter(context), by: .init(name: admin.name, via: .api))
            return Response(status: .noContent)
        }
        api.post("/admin/verify") { request, context in
            let admin = try await access.admin(context)
            try Self.checkCSRF(request.headers[HTTPField.Name("X-CSRF-Token")!], context)
            let body = try await Forms.json(VerifyBody.self, request)
            return try Responses.json(try await verify(mode: body.mode, by: .init(name: admin.name, via: .api)))
        }
        api.get("/admin/audit") { request, context in
            _ = try await access.admin(context)
            let limit = try Params.query(request, "limit").map { text -> Int in
                guard let n = Int(text), (1...1000).contains(n) else { throw WebError(.badRequest, "limit is a whole number from 1 to 1000") }
                return n
            } ?? 100
            let before = try Params.queryID(request, "before")
            let registry = self.registry
            return try Responses.json(try await blocking { try registry.audit(limit: limit, before: before) })
        }
    }

    func shareRoute(_ request: Request, _ context: WebContext, share: Bool) async throws -> Response {
        let person = try await access.person(context)
        try Self.checkCSRF(request.headers[HTTPField.Name("X-CSRF-Token")!], context)
        let chain = try await access.chain(context, for: person)
        guard let other = context.parameters.get("person"), DeviceName.isValid(other) else { throw WebError(.notFound, "no such person") }
        try await changeShare(person, chain: chain, with: other, share: share, via: .api)
        let registry = self.registry
        return try Responses.json(ShareReply(chain: chain, sharedWith: try await blocking { try registry.shares(chain: chain).map(\.person) }))
    }
}
