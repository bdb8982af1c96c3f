import Foundation
import GRDB
import Testing
import HealthProbeTestSupport

/// `hp-server serve` holds its data directory's serving lock before any of its services
/// starts: a verification the schedule runs at once (a chain never verified) must not take
/// the lock first and leave the listener to find it held.
@Suite("The serving lock", .blocksOnTools)
struct ServingLockTests {
    @Test("a verification due at start holds on for 3 s while the listener starts 1 s late (failpoints): the server starts, the verification is recorded, a second server is refused")
    func verificationDueAtStart() throws {
        let data = TempDir(), home = TempDir()
        #expect(try hpServer(["init", "--data", data.path]).0 == 0)
        #expect(try hpNode(["--home", home.path, "capture", "--simulate", "--seed", "2", "--days", "2"]).0 == 0)
        let first = try ServerProcess(data: data.path)
        try enrollWithCLI(data: data.path, home: home.path, name: "anna-phone", port: first.port)
        #expect(try hpNode(["--home", home.path, "sync"]).0 == 0)
        first.stop()
        let registry = try rawQueue(data.path + "/server.sqlite")
        let before = try registry.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM verifications") ?? 0 }

        let server = try ServerProcess(data: data.path, environment: ["HP_FAILPOINT_LISTEN_AFTER": "1", "HP_FAILPOINT_VERIFY_HOLD": "3"])
        let deadline = Date().addingTimeInterval(60)
        while try registry.read({ db in try Int.fetchOne(db, sql: "SELECT count(*) FROM verifications") ?? 0 }) == before && Date() < deadline {
            usleep(100_000)
        }
        #expect(try registry.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM verifications") ?? 0 } > before, "the scheduled verification did not run")
        #expect(try hpNode(["--home", home.path, "capture", "--simulate", "--seed", "2", "--days", "1"]).0 == 0)
        #expect(try hpNode(["--home", home.path, "sync", "--server", "127.0.0.1:\(server.port)"]).0 == 0)
        do {
            _ = try ServerProcess(data: data.path, timeout: 20)
            Issue.record("a second server started on the same data directory")
        } catch let e as ServerDidNotStart {
            #expect(e.stderr.contains("another hp-server is serving"), "\(e.stderr)")
        }
    }
}
