import Foundation
import GRDB
import Testing
@testable import HealthProbeArchive
@testable import HealthProbeServer
import HealthProbeTestSupport

/// The dashboard's kept read connections: a write committed after a pool was opened is
/// seen by the next read, a replica discarded and made again is read afresh (never the
/// deleted file through an old connection), a missing replica is not found, and no more
/// chains are kept open than the capacity.
@Suite("Replica read connections kept open")
struct ReplicaReadersTests {
    static let chains = (1...3).map { String(repeating: String($0), count: 64) }

    static func typeCount(_ db: Database) throws -> Int { try Int.fetchOne(db, sql: "SELECT count(*) FROM sample_types") ?? -1 }

    static func addTypes(_ replica: Archive, _ count: Int) throws {
        try replica.writer.write { db in
            for i in 0..<count { try db.execute(sql: "INSERT INTO sample_types(type_identifier) VALUES (?)", arguments: ["HKQuantityTypeIdentifierReaders\(i)"]) }
        }
    }

    @Test("a commit after the pool opened is read; a replaced replica is read afresh; a missing one is not found")
    func freshAfterWritesAndReplacement() throws {
        let dir = TempDir()
        let store = ServerStore(root: dir.path)
        try store.create()
        let chain = Self.chains[0]
        let readers = ReplicaReaders(store: store)
        #expect(throws: ArchiveError.self) { try readers.read(chain, Self.typeCount) }
        #expect(try readers.lastSequence(chain) == 0)

        var replica: Archive? = try store.openReplica(chain)
        let empty = try readers.read(chain, Self.typeCount)
        try Self.addTypes(replica!, 5)
        #expect(try readers.read(chain, Self.typeCount) == empty + 5, "a commit made after the pool opened")
        #expect(readers.openCount == 1)

        // Discarded (a refused first bundle) and made again before any read: the new file
        // (another inode), not the deleted one the kept pool still holds open.
        try replica!.close()
        replica = nil
        store.discardChain(chain)
        let again = try store.openReplica(chain)
        try Self.addTypes(again, 2)
        #expect(readers.openCount == 1)
        #expect(try readers.read(chain, Self.typeCount) == empty + 2)
        #expect(readers.openCount == 1, "the old pool was replaced")
        try again.close()

        // Discarded for good: a read says not found, the last sequence is 0, and the warmer's
        // sweep closes a kept pool that nothing reads again.
        _ = try readers.read(chain, Self.typeCount)
        store.discardChain(chain)
        #expect(readers.openCount == 1)
        readers.sweep()
        #expect(readers.openCount == 0, "the pool of a deleted replica is closed")
        #expect(throws: ArchiveError.self) { try readers.read(chain, Self.typeCount) }
        #expect(try readers.lastSequence(chain) == 0)
    }

    @Test("no more chains are kept open than the capacity, least recently used closed first")
    func bounded() throws {
        let dir = TempDir()
        let store = ServerStore(root: dir.path)
        try store.create()
        for chain in Self.chains { try store.openReplica(chain).close() }
        let readers = ReplicaReaders(store: store, capacity: 2)
        for chain in Self.chains {
            #expect(try readers.read(chain, Self.typeCount) >= 0)
            #expect(readers.openCount <= 2)
        }
        #expect(readers.openCount == 2)
        #expect(readers.openChains == Set(Self.chains[1...2]), "the least recently used went first")
        _ = try readers.read(Self.chains[1], Self.typeCount)   // 1 is now more recent than 2
        _ = try readers.read(Self.chains[0], Self.typeCount)
        #expect(readers.openChains == [Self.chains[0], Self.chains[1]])
        #expect(try readers.lastSequence(Self.chains[2]) == 0, "a replica with no bundle received")
    }
}
