import Foundation
import HealthProbeServer
import Hummingbird

/// hummingbird-auth's session storage, kept in the server's registry (`web_sessions`):
/// sessions survive a restart, only a hash of each id is stored, and the registry ends a
/// person's sessions in the same transaction that changes their password, role or
/// membership. Holds `WebSession` values only.
struct RegistrySessionStore: PersistDriver {
    let registry: DeviceRegistry
    let now: @Sendable () -> Double

    func create<Object: Codable & Sendable>(key: String, value: Object, expires: Duration?) async throws {
        try await store(key: key, value: value, expires: expires, create: true)
    }

    func set<Object: Codable & Sendable>(key: String, value: Object, expires: Duration?) async throws {
        try await store(key: key, value: value, expires: expires, create: false)
    }

    func get<Object: Codable & Sendable>(key: String, as: Object.Type) async throws -> Object? {
        try await getWithTTL(key: key, as: Object.self)?.object
    }

    func getWithTTL<Object: Codable & Sendable>(key: String, as: Object.Type) async throws -> (object: Object, ttl: Duration?)? {
        let registry = self.registry, hash = WebSessions.idHash(key), now = self.now()
        guard let stored = try await blocking({ try registry.session(idHash: hash, now: now) }) else { return nil }
        do {
            let value = try JSONDecoder().decode(Object.self, from: stored.data)
            return (value, stored.expiresAt.map { .milliseconds(Int64(max(0, min($0 - now, 1e9)) * 1000)) })
        } catch {
            throw PersistError.invalidConversion
        }
    }

    func remove(key: String) async throws {
        let registry = self.registry, hash = WebSessions.idHash(key)
        try await blocking { try registry.removeSession(idHash: hash) }
    }

    func store<Object: Codable & Sendable>(key: String, value: Object, expires: Duration?, create: Bool) async throws {
        guard let session = value as? WebSession else { throw PersistError.invalidConversion }
        let now = self.now()
        let stored = WebSessions.Stored(personID: session.personID, data: try JSONEncoder().encode(session),
                                        expiresAt: expires.map { now + Double($0.components.seconds) })
        let registry = self.registry, hash = WebSessions.idHash(key)
        do {
            try await blocking { try registry.storeSession(idHash: hash, stored, now: now, create: create) }
        } catch let e as DeviceRegistry.AuthError where e.code == .duplicate {
            throw PersistError.duplicate
        }
    }
}
