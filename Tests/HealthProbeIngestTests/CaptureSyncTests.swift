import Foundation
import HealthProbeArchive
import HealthProbeIngest
import HealthProbeNode
import HealthProbeProtocol
import HealthProbeServer
import HealthProbeTestSupport
import Testing

/// After a post is recorded, the automation's own chain reaches a real household server
/// over real TLS; while the server cannot be reached, the status says so and tries again later.
@Suite("Capture sync", .serialized)
struct CaptureSyncTests {
    @Test("post, then the observation is on the server as the automation's own chain; a home that is not enrolled is left alone and says so")
    func endToEnd() async throws {
        let data = TempDir()
        let store = ServerStore(root: data.path)
        try store.create()
        let registry = try store.registry()
        try registry.addPerson(name: "ann", role: .admin, password: "correct-horse-battery", now: 1_750_000_000, cost: 4)
        let sync = try SyncServer(store: store)
        let dir = TempDir()
        let root = dir.path + "/home"
        let homes = CaptureHomes(home: ArchiveHome(root: root))
        try await withThrowingTaskGroup(of: Void.self) { group in
            let (ports, continuation) = AsyncStream.makeStream(of: Int.self)
            group.addTask { try await sync.run(host: "127.0.0.1", port: 0) { continuation.yield($0) } }
            var it = ports.makeAsyncIterator()
            guard let port = await it.next() else { return }
            defer { group.cancelAll() }
            // The automation's home, enrolled as a device of its own.
            let automation = homes.automation("phone")
            let archives = OpenArchives()
            let node = try archives.node(automation)
            let secret = try registry.issueToken(name: "ann-phone-hae", person: try registry.personForEnrollment("ann"), now: Date().timeIntervalSince1970)
            let token = EnrollmentToken(address: "127.0.0.1:\(port)", fingerprint: try store.identity().fingerprint, name: "ann-phone-hae", secret: secret)
            try await SyncClient.enroll(token: token, clientTime: Date().timeIntervalSince1970).save(automation.keyStore)
            let chain = node.deviceChainHash

            try await withIngest(root: root, archives: archives, extra: { queue, status, archives in
                [CaptureSync(queue: queue, archives: archives, status: status, surfaceName: { ($0 as NSString).lastPathComponent }, clock: ContinuousClock(),
                             now: { Date().timeIntervalSince1970 }, logger: quietLogger, tick: .milliseconds(50))]
            }) { n in
                let now = Date().timeIntervalSince1970
                let r = try await n.post(HAESynthetic.points("step_count", "count", at: [now - 3600, now - 1800]), query: "period=since_last_sync&aggregation=none")
                #expect(r.status == 200)
                var sequence = 0
                for _ in 0..<200 where sequence < 1 {
                    sequence = (try? store.status(chain).0) ?? 0
                    if sequence < 1 { try await Task.sleep(for: .milliseconds(50)) }
                }
                #expect(sequence == 1, "the server never received the automation's observation")
                // The status is written once the sync returns, just after the server acknowledged.
                for _ in 0..<100 where n.status.snapshot.surfaces["hae-phone"]?.lastSyncSequence != 1 { try await Task.sleep(for: .milliseconds(50)) }
                let surface = n.status.snapshot.surfaces["hae-phone"]
                #expect(surface?.lastSyncSequence == 1 && surface?.lastSyncError == nil && surface?.enrolled == true, "\(String(describing: surface))")
                // The node's own home is not enrolled: left alone, and the status says how to enroll it.
                n.queue.due(root, now: Date().timeIntervalSince1970)
                for _ in 0..<100 where n.status.snapshot.surfaces["home"]?.enrolled == nil { try await Task.sleep(for: .milliseconds(50)) }
                #expect(n.status.snapshot.surfaces["home"]?.enrolled == false)
                #expect(n.status.snapshot.surfaces["home"]?.lastSyncError?.contains("enroll") == true)
            }
        }
    }

    @Test("a server that cannot be reached: the error is shown, the next attempt waits (30 s, doubling), nothing is lost")
    func unreachable() async throws {
        let dir = TempDir()
        let root = dir.path + "/home"
        let automation = CaptureHomes(home: ArchiveHome(root: root)).automation("phone")
        let archives = OpenArchives()
        _ = try archives.node(automation)
        // Enrolled with a server whose port nobody listens on.
        try NodeEnrollment(address: "127.0.0.1:1", fingerprint: String(repeating: "a", count: 64), name: "ann-phone-hae", credential: "x").save(automation.keyStore)
        try await withIngest(root: root, archives: archives, extra: { queue, status, archives in
            [CaptureSync(queue: queue, archives: archives, status: status, surfaceName: { ($0 as NSString).lastPathComponent }, clock: ContinuousClock(),
                         now: { Date().timeIntervalSince1970 }, logger: quietLogger, tick: .milliseconds(50))]
        }) { n in
            let now = Date().timeIntervalSince1970
            #expect(try await n.post(HAESynthetic.points("step_count", "count", at: [now - 60]), query: "period=since_last_sync").status == 200)
            for _ in 0..<200 where n.status.snapshot.surfaces["hae-phone"]?.syncFailures ?? 0 == 0 { try await Task.sleep(for: .milliseconds(50)) }
            let s = try #require(n.status.snapshot.surfaces["hae-phone"])
            #expect(s.syncFailures == 1 && s.lastSyncError != nil)
            let wait = (s.nextSyncAttemptAt ?? 0) - Date().timeIntervalSince1970
            #expect(wait > 20 && wait <= 30, "\(wait)")
            #expect(try await n.observationCount("phone") == 1)
        }
    }
}
