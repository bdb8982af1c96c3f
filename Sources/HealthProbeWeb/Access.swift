import Foundation
import HealthProbeServer
import Hummingbird
import NIOPosix

/// Who is asking, and what they may read: every chain access goes through here.
struct Access: Sendable {
    let registry: DeviceRegistry
    let store: ServerStore

    /// The signed-in person, re-read from the registry on every request (a removed
    /// person or a changed role takes effect at once).
    func person(_ context: WebContext) async throws -> People.Person {
        guard let session = context.sessions.session else { throw WebError(.unauthenticated, "sign in first") }
        let registry = self.registry
        guard let person = try await blocking({ try registry.person(id: session.personID) }) else {
            context.sessions.clearSession()
            throw WebError(.unauthenticated, "your account was removed; ask an admin")
        }
        return person
    }

    /// The person, who must be an admin.
    func admin(_ context: WebContext) async throws -> People.Person {
        let p = try await person(context)
        guard p.role == .admin else { throw WebError(.forbidden, "only an admin may do this") }
        return p
    }

    /// The chain of the path, which `person` must be allowed to read (else: not found).
    func chain(_ context: WebContext, for person: People.Person) async throws -> String {
        let chain = try Params.chain(context)
        let registry = self.registry
        let path = store.replicaPath(chain)
        guard try await blocking({ try FileManager.default.fileExists(atPath: path) && registry.canRead(person, chain: chain) }) else {
            throw WebError.noSuchChain
        }
        return chain
    }

    /// The subject of an alert path: a chain `person` may read, or `server` (the server-level
    /// alerts) for an admin; anything else is not found, as `chain` answers.
    func alertSubject(_ context: WebContext, for person: People.Person) async throws -> String {
        guard context.parameters.get("chain") == AlertCondition.serverKey else { return try await chain(context, for: person) }
        guard person.role == .admin else { throw WebError.noSuchChain }
        return AlertCondition.serverKey
    }

    /// Chains `person` may read, among those with a replica.
    func readableChains(_ person: People.Person) async throws -> [String] {
        let registry = self.registry, store = self.store
        return try await blocking { try registry.readableChains(person, among: try store.chains()) }
    }
}

/// Runs blocking work (SQLite reads, bcrypt) on NIO's blocking-I/O threads, never on
/// Swift's cooperative threads (docs/decisions/2026-11-24-blocking-work-off-cooperative-threads.md).
func blocking<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await NIOThreadPool.singleton.runIfActive(body)
}
