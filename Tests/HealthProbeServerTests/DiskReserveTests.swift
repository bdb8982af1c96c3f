import Foundation
import Synchronization
import Testing
@testable import HealthProbeServer
import HealthProbeProtocol
import HealthProbeNode
import HealthProbeTestSupport

@Suite("The server keeps part of its disk free: bundles are refused below the reserve")
struct DiskReserveTests {
    @Test("a server whose disk has less free than its reserve refuses a bundle as it opens (storage, retryable): nothing stored; with room it syncs")
    func refusedAtOpen() async throws {
        let a = TempHome()
        try simulate(a, days: 2)
        let data = TempDir()
        // The real file system's free space, below a reserve no disk meets.
        try await withServer(data, diskReserveBytes: Int64.max / 4) { server in
            let e = try await server.enroll("a")
            let node = try a.open()
            let refused = await #expect(throws: SyncProtocolError.self) { _ = try await SyncClient(node: node, outbox: a.root + "/outbox").sync(e) }
            #expect(refused?.code == .storage, "\(String(describing: refused))")
            #expect(refused?.message.contains("disk is nearly full") == true)
            #expect(try server.store.chains().isEmpty)
            #expect(try await quarantineEmpties(server.store))
        }
        try await withServer(data) { server in
            let e = try await server.enroll("b")
            let node = try a.open()
            #expect(try await SyncClient(node: node, outbox: a.root + "/outbox").sync(e).sent == 1)
            for (x, y) in try digests(node, server.store) { #expect(x == y) }
        }
    }

    @Test("a disk that fills while a stream arrives refuses the stream at its next part (storage): nothing of it is stored; once room is made the node syncs, digests equal")
    func refusedMidStream() async throws {
        let a = TempHome()
        try simulate(a, days: 2)
        // Free space as read: plenty for the first reads (the bundle's opening, its first parts), then none, until room is made.
        let reads = Mutex(0), room = Mutex(false)
        let space: @Sendable (String) -> ServerConditions.Space? = { _ in
            let n = reads.withLock { $0 += 1; return $0 }
            return (room.withLock { $0 } || n <= 4) ? (free: 1 << 40, total: 1 << 41) : (free: 1 << 20, total: 1 << 41)
        }
        try await withServer(TempDir(), diskReserveBytes: 1 << 30, space: space) { server in
            let e = try await server.enroll("a")
            let node = try a.open()
            var client = SyncClient(node: node, outbox: a.root + "/outbox")
            client.partSize = 16 * 1024
            let refused = await #expect(throws: SyncProtocolError.self) { _ = try await client.sync(e) }
            #expect(refused?.code == .storage, "\(String(describing: refused))")
            #expect(reads.withLock { $0 } > 4)
            #expect(try await quarantineEmpties(server.store))
            // The stream's apply ends once the connection has: its replica is removed then.
            let deadline = ContinuousClock.now + .seconds(30)
            while try !server.store.chains().isEmpty && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
            #expect(try server.store.chains().isEmpty)
            room.withLock { $0 = true }
            let r = try await client.sync(e)
            #expect(r.sent == 1)
            for (x, y) in try digests(node, server.store) { #expect(x == y) }
        }
    }
}
