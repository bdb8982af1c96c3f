import Foundation
import HealthProbeServer
import HTTPTypes
import Hummingbird

/// `/api/v1/alerts`: the alerts on chains the signed-in person may read, acknowledge and
/// snooze them, and their own alert channels. Changes need `X-CSRF-Token`.
extension WebServer {
    struct ChannelBody: Decodable { let kind: String; let target: String; let secret: String? }
    struct SnoozeBody: Decodable { let hours: Int }
    /// Acknowledge: optionally the firing the client saw (`fired_at` of `GET /api/v1/alerts`).
    struct AckBody: Decodable { let fired_at: Double? }

    func addAlertAPIRoutes(_ router: Router<WebContext>) {
        let api = router.group("/api/v1/alerts")
        router.get("/api/v1/alerts") { _, context in
            let person = try await access.person(context)
            let registry = self.registry
            return try Responses.json(try await blocking { try registry.alertStates(for: person) })
        }
        api.post("/{chain}/{condition}/ack") { request, context in
            let (person, chain, condition) = try await alertTarget(request, context)
            // An empty body acknowledges whatever fires now; `fired_at` only the firing the client saw.
            let body = try await Forms.collect(request, "body")
            let firedAt: Double?
            if body.readableBytes == 0 { firedAt = nil } else {
                guard let ack = try? JSONDecoder().decode(AckBody.self, from: Data(buffer: body)) else {
                    throw WebError(.badRequest, "the body is empty or {\"fired_at\": seconds}, the fired_at of GET /api/v1/alerts")
                }
                guard ack.fired_at.map({ $0.isFinite && $0 >= 0 }) ?? true else { throw WebError(.badRequest, "fired_at is Unix seconds, as GET /api/v1/alerts gives it") }
                firedAt = ack.fired_at
            }
            let registry = self.registry
            try await blocking {
                try registry.acknowledgeAlert(chain: chain, condition: condition, person: person, now: Date().timeIntervalSince1970,
                                              firedAt: firedAt, by: .init(name: person.name, via: .api))
            }
            return Response(status: .noContent)
        }
        api.post("/{chain}/{condition}/snooze") { request, context in
            let (person, chain, condition) = try await alertTarget(request, context)
            let body = try await Forms.json(SnoozeBody.self, request)
            guard (1...720).contains(body.hours) else { throw WebError(.badRequest, "hours is a whole number from 1 to 720") }
            let registry = self.registry
            try await blocking {
                try registry.snoozeAlert(chain: chain, condition: condition, person: person, until: Date().timeIntervalSince1970 + Double(body.hours) * 3600,
                                         by: .init(name: person.name, via: .api))
            }
            return Response(status: .noContent)
        }
        api.get("/channels") { _, context in
            let person = try await access.person(context)
            let registry = self.registry
            return try Responses.json(try await blocking { try registry.alertChannels(person: person.name) })
        }
        api.post("/channels") { request, context in
            let person = try await access.person(context)
            try Self.checkCSRF(request.headers[HTTPField.Name("X-CSRF-Token")!], context)
            let body = try await Forms.json(ChannelBody.self, request)
            guard let kind = AlertTables.Channel.Kind(rawValue: body.kind) else { throw WebError(.badRequest, "kind is webhook, ntfy or email") }
            let registry = self.registry
            let channel = try await blocking {
                try registry.addAlertChannel(person: person.name, kind: kind, target: body.target, secret: body.secret, now: Date().timeIntervalSince1970,
                                             by: .init(name: person.name, via: .api))
            }
            return try Responses.json(channel, status: .created)
        }
        api.delete("/channels/{id}") { request, context in
            let person = try await access.person(context)
            try Self.checkCSRF(request.headers[HTTPField.Name("X-CSRF-Token")!], context)
            let id = try Params.id(context, "id")
            let registry = self.registry
            try await blocking { try registry.removeAlertChannel(id: id, person: person.name, by: .init(name: person.name, via: .api)) }
            return Response(status: .noContent)
        }
    }

    /// The person, the chain (which they must be allowed to read; `server` for an admin) and the condition of an alert path.
    func alertTarget(_ request: Request, _ context: WebContext) async throws -> (People.Person, String, AlertCondition) {
        let person = try await access.person(context)
        try Self.checkCSRF(request.headers[HTTPField.Name("X-CSRF-Token")!], context)
        let chain = try await access.alertSubject(context, for: person)
        guard let condition = context.parameters.get("condition").flatMap(AlertCondition.init(rawValue:)) else {
            throw WebError(.notFound, "no such alert condition (\(AlertCondition.allCases.map(\.rawValue).joined(separator: ", ")))")
        }
        return (person, chain, condition)
    }
}
