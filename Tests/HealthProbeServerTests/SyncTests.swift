import Foundation
import GRDB
import NIOCore
import NIOPosix
import Testing
@testable import HealthProbeArchive
@testable import HealthProbeSimulator
@testable import HealthProbeServer
import HealthProbeProtocol
import HealthProbeNode
import HealthProbeTestSupport

func simulate(_ t: TempHome, days: Int, seed: UInt64 = 1) throws {
    var o = SimulatorCapture.Options()
    o.seed = seed
    o.days = days
    o.types = [SimulatedType.all[1], SimulatedType.all[10], SimulatedType.all[13], SimulatedType.all[15]]
    _ = try SimulatorCapture.run(home: t.home, options: o)
}

func digests(_ node: NodeArchive, _ store: ServerStore) throws -> [(ChainStateDigest.Result, ChainStateDigest.Result)] {
    let replica = try Archive.open(path: store.replicaPath(node.deviceChainHash), mode: .readOnly)
    let pairs = try replica.writer.read { db in
        try Row.fetchAll(db, sql: "SELECT sequence, observation_id FROM bundle_log WHERE direction = 'received' ORDER BY sequence").map { ($0[0] as Int, $0[1] as Int64) }
    }
    let nodeIDs = try node.archive.writer.read { db in try Int64.fetchAll(db, sql: "SELECT id FROM observations WHERE device_chain_id = ? ORDER BY id", arguments: [node.deviceChainID]) }
    return try pairs.map { seq, replicaObs in
        (try node.archive.writer.read { db in try ChainStateDigest.compute(db, observationID: nodeIDs[seq - 1]) },
         try replica.writer.read { db in try ChainStateDigest.compute(db, observationID: replicaObs) })
    }
}

@Suite("Sync over TLS on 127.0.0.1")
struct SyncTests {
    @Test("two nodes sync into separate chains; digests match at every observation; incremental sync sends only the new one")
    func twoNodes() async throws {
        let data = TempDir()
        let a = TempHome(), b = TempHome()
        try simulate(a, days: 3)
        try simulate(a, days: 1)
        try simulate(b, days: 2, seed: 2)
        try await withServer(data) { server in
            let store = server.store
            let ea = try await server.enroll("a"), eb = try await server.enroll("b")
            let ra = try await SyncClient(node: try a.open(), outbox: a.root + "/outbox").sync(ea)
            #expect(ra.sent == 2)
            #expect(ra.bytesOnWire < ra.uncompressedBytes / 2)
            let rb = try await SyncClient(node: try b.open(), outbox: b.root + "/outbox").sync(eb)
            #expect(rb.sent == 1)
            #expect(try store.chains().count == 2)
            for (x, y) in try digests(try a.open(), store) { #expect(x == y) }
            for (x, y) in try digests(try b.open(), store) { #expect(x == y) }
            // Up to date, then one new observation.
            let again = try await SyncClient(node: try a.open(), outbox: a.root + "/outbox").sync(ea)
            #expect(again.sent == 0)
            try simulate(a, days: 1)
            let inc = try await SyncClient(node: try a.open(), outbox: a.root + "/outbox").sync(ea)
            #expect(inc.sent == 1)
            #expect(inc.serverHadSequence == 2)
            #expect(inc.lastSequence == 3)
            for (x, y) in try digests(try a.open(), store) { #expect(x == y) }
            let acks = try await a.open().archive.writer.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM bundle_log WHERE direction = 'sent' AND acknowledged_at IS NOT NULL") }
            #expect(acks == 3)
        }
    }

    @Test("an outbox file damaged after its bundle was built is never completed: nothing stored, the node records nothing, the next sync sends it whole")
    func damagedOutbox() async throws {
        let data = TempDir()
        let a = TempHome()
        try simulate(a, days: 2)
        try await withServer(data) { server in
            let e = try await server.enroll("a")
            let node = try a.open()
            var client = SyncClient(node: node, outbox: a.root + "/outbox")
            client.onStored = { path in
                // Garbage over the middle of the stored parts (each part read back is checked against its SHA-256).
                let handle = try #require(FileHandle(forUpdatingAtPath: path))
                defer { try? handle.close() }
                let size = try handle.seekToEnd()
                try handle.seek(toOffset: size / 2)
                handle.write(Data(repeating: 0x5A, count: 64))
            }
            await #expect { _ = try await client.sync(e) } throws: { "\($0)".contains("changed after it was built") }
            #expect(try await quarantineEmpties(server.store))
            #expect(try server.store.chains().isEmpty)
            let logged = try await node.archive.writer.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM bundle_log") }
            #expect(logged == 0)
            let again = try await SyncClient(node: node, outbox: a.root + "/outbox").sync(e)
            #expect(again.sent == 1 && again.serverHadSequence == 0)
            for (x, y) in try digests(node, server.store) { #expect(x == y) }
        }
    }

    @Test("a connection dropped mid-bundle stores nothing; garbage gets an error; the real client then syncs")
    func droppedAndGarbage() async throws {
        let data = TempDir()
        let a = TempHome()
        try simulate(a, days: 2)
        let node = try a.open()
        try await withServer(data) { server in
            let store = server.store
            let e = try await server.enroll("a")
            // A bundle begun, one of two parts sent, then the connection closes.
            let begin = try SyncFrame.json(.bundleBegin, .object(["sequence": .int(1), "manifest_hash": .string(String(repeating: "a", count: 64)),
                                                                  "parts": .int(2), "item_count": .int(3), "uncompressed_size": .int(20)]))
            var part = ByteBuffer()
            part.writeInteger(UInt32(0), endianness: .big)
            part.writeInteger(UInt32(10), endianness: .big)
            part.writeBytes(try BundlePartCodec.compress(Array("0123456789".utf8)))
            _ = try await server.raw(try wire([try authFrame(e), begin, SyncFrame(kind: .bundlePart, payload: part)]), readAll: false)
            // The server removes the quarantine file when it sees the close.
            #expect(try await quarantineEmpties(store))
            #expect(try store.chains().isEmpty)
            // Garbage instead of a hello (inside TLS): an ERROR frame (bad_magic) and nothing stored.
            let reply = try await server.raw(Array("GET / HTTP/1.1\r\n\r\n".utf8))
            #expect(String(decoding: reply, as: UTF8.self).contains("bad_magic"))
            #expect(try store.chains().isEmpty)
            let r = try await SyncClient(node: node, outbox: a.root + "/outbox").sync(e)
            #expect(r.sent == 1)
            for (x, y) in try digests(node, store) { #expect(x == y) }
        }
    }
}
