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

        // Discarded (a refused first bundle) and made again: the new file, not the deleted one.
        try replica!.close()
        replica = nil
        store.discardChain(chain)
        #expect(throws: ArchiveError.self) { try readers.read(chain, Self.typeCount) }
        #expect(readers.openCount == 0, "the pool of a deleted replica is dropped")
        let again = try store.openReplica(chain)
        try Self.addTypes(again, 2)
        #expect(try readers.read(chain, Self.typeCount) == empty + 2)
        try again.close()
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
        #expect(try readers.lastSequence(Self.chains[2]) == 0, "a replica with no bundle received")
    }
}
