import Foundation
import GRDB
import Testing
@testable import HealthProbeServer
import HealthProbeTestSupport

/// People, roles and sharing in the registry: who may read which chain.
@Suite("People and roles")
struct PeopleTests {
    func registry() throws -> (TempDir, DeviceRegistry) {
        let dir = TempDir()
        return (dir, try DeviceRegistry(path: dir.path + "/server.sqlite"))
    }

    /// Binds `chain` to a device of `person` as an accepted bundle would.
    func own(_ r: DeviceRegistry, device: String, person: String, chain: String) throws {
        let secret = try r.issueToken(name: device, person: try r.personForEnrollment(person), now: 1000)
        let (identity, _) = try r.redeem(name: device, secret: secret, now: 1001)
        try r.claim(identity, chain: chain, now: 1002)
    }

    @Test("admins read every chain, members their own and shared ones, viewers shared ones only")
    func readMatrix() throws {
        let (dir, r) = try registry()
        defer { withExtendedLifetime(dir) {} }
        for (n, role) in [("ann", People.Role.admin), ("bob", .member), ("cat", .member), ("vic", .viewer)] {
            try r.addPerson(name: n, role: role, password: nil, now: 1)
        }
        let a = String(repeating: "a", count: 64), b = String(repeating: "b", count: 64)
        try own(r, device: "ann-phone", person: "ann", chain: a)
        try own(r, device: "bob-phone", person: "bob", chain: b)
        func reads(_ name: String) throws -> [Bool] { let p = try #require(try r.person(named: name)); return try [a, b].map { try r.canRead(p, chain: $0) } }
        #expect(try reads("ann") == [true, true])
        #expect(try reads("bob") == [false, true])
        #expect(try reads("cat") == [false, false])
        #expect(try reads("vic") == [false, false])
        try r.share(chain: b, with: "vic", now: 5)
        try r.share(chain: a, with: "cat", now: 5)
        #expect(try reads("vic") == [false, true])
        #expect(try reads("cat") == [true, false])
        // Sharing: admins any chain, members their own, viewers none.
        #expect(try r.canShare(#require(try r.person(named: "bob")), chain: b))
        #expect(try !r.canShare(#require(try r.person(named: "bob")), chain: a))
        #expect(try !r.canShare(#require(try r.person(named: "vic")), chain: b))
        try r.unshare(chain: b, from: "vic")
        #expect(try reads("vic") == [false, false])
        #expect { try r.unshare(chain: b, from: "vic") } throws: { ($0 as? DeviceRegistry.AuthError)?.code == .notFound }
        // A viewer cannot own devices; with several people, enrollment must say whose device it is.
        #expect(throws: DeviceRegistry.AuthError.self) { try r.personForEnrollment("vic") }
        #expect(throws: DeviceRegistry.AuthError.self) { try r.personForEnrollment(nil) }
    }

    @Test("the last admin stays; a person with devices is not removed; names and passwords are checked")
    func guards() throws {
        let (dir, r) = try registry()
        defer { withExtendedLifetime(dir) {} }
        try r.addPerson(name: "ann", role: .admin, password: "long-enough-password", now: 1, cost: 4)
        #expect(throws: DeviceRegistry.AuthError.self) { try r.removePerson(name: "ann") }
        #expect(throws: DeviceRegistry.AuthError.self) { try r.setRole(person: "ann", role: .member) }
        #expect(throws: DeviceRegistry.AuthError.self) { try r.addPerson(name: "ann", role: .member, password: nil, now: 2) }
        #expect(throws: DeviceRegistry.AuthError.self) { try r.addPerson(name: "bad name", role: .member, password: nil, now: 2) }
        #expect(throws: DeviceRegistry.AuthError.self) { try r.addPerson(name: "short", role: .member, password: "short", now: 2, cost: 4) }
        #expect(try r.person(named: "short") == nil)
        try r.addPerson(name: "bob", role: .member, password: nil, now: 2)
        try own(r, device: "bob-phone", person: "bob", chain: String(repeating: "b", count: 64))
        #expect(throws: DeviceRegistry.AuthError.self) { try r.removePerson(name: "bob") }
        #expect(throws: DeviceRegistry.AuthError.self) { try r.setRole(person: "bob", role: .viewer) }  // a viewer owns no devices
        try r.giveDevice("bob-phone", to: "ann")
        try r.removePerson(name: "bob")
        #expect(try r.chainPerson(String(repeating: "b", count: 64)) == "ann")
        // Passwords: bcrypt, checked; a person without one cannot sign in.
        #expect(try r.checkPassword(name: "ann", password: "long-enough-password")?.name == "ann")
        #expect(try r.checkPassword(name: "ann", password: "long-enough-passworD") == nil)
        #expect(try r.checkPassword(name: "nobody", password: "long-enough-password") == nil)
        let stored = try r.database.read { db in try String.fetchOne(db, sql: "SELECT password_hash FROM people WHERE name = 'ann'") }
        #expect(stored?.hasPrefix("$2b$04$") == true && stored?.contains("long-enough") == false)
    }

    @Test("upgrading a registry with devices gives them a person, an admin named household without a password")
    func upgrade() throws {
        let dir = TempDir()
        let path = dir.path + "/server.sqlite"
        // A registry as the previous release left it: migration v1 only, with a device owning a chain.
        let queue = try DatabaseQueue(path: path)
        let v1 = DeviceRegistry.migrator
        try v1.migrate(queue, upTo: "v1")
        try queue.write { db in
            try db.execute(sql: "INSERT INTO devices(name, created_at, enrolled_at, credential_hash) VALUES ('old-phone', 1, 2, 'x')")
            try db.execute(sql: "INSERT INTO chain_owners(device_chain_hash, device_id, bound_at) VALUES (?, 1, 3)", arguments: [String(repeating: "c", count: 64)])
        }
        try queue.close()
        _ = v1
        let r = try DeviceRegistry(path: path)
        let people = try r.people()
        #expect(people.map(\.name) == [People.upgradePerson])
        #expect(people.first?.role == .admin && people.first?.hasPassword == false && people.first?.devices == ["old-phone"])
        #expect(try r.chainPerson(String(repeating: "c", count: 64)) == "household")
        #expect(try r.devices().first?.person == "household")
        // A new, empty registry gets no one.
        let (freshDir, fresh) = try registry()
        defer { withExtendedLifetime(freshDir) {} }
        #expect(try fresh.people().isEmpty)
    }
}
