import Foundation
import GRDB
import Testing
@testable import HealthProbeArchive
import HealthProbeTestSupport

@Suite("Report cache")
struct CacheTests {
    @Test("rebuild mirrors the archive; a new observation is a targeted refresh; settings survive; the archive wins")
    func lifecycle() throws {
        let t = TempHome()
        let node = try t.open()
        try capture(node, samples: (0..<30).map { hr($0) })
        try capture(node, samples: (0..<25).map { hr($0) })
        let cache = try ArchiveCache.of(t.home)
        try cache.setSetting("selected_types", "HKQuantityTypeIdentifierHeartRate", now: 1)
        #expect(try cache.refresh(from: node) == .full(reason: "empty cache"))
        #expect(try cache.refresh(from: node) == .upToDate)
        let rows = try cache.observations()
        let direct = try node.archive.writer.read { db in try ObservationQueries.list(db, chainID: node.deviceChainID) }
        #expect(rows.map(\.id) == direct.map(\.id))
        #expect(rows.map(\.disappeared) == direct.map(\.disappeared))
        #expect(rows.map(\.visibleRecordCount) == [30, 25])
        #expect(try cache.status() == node.archive.writer.read { db in try ObservationQueries.status(db, chainID: node.deviceChainID) })
        #expect(try cache.counts()["cached_diff_summaries"] == 1)
        #expect(try cache.counts()["cached_daily_aggregates"]! > 0)

        // A new observation: only it is computed.
        try capture(node, samples: (0..<26).map { hr($0) })
        #expect(try cache.refresh(from: node) == .targeted(observations: 1))
        #expect(try cache.observations().map(\.visibleRecordCount) == [30, 25, 26])

        // The archive wins: a status changed in the archive replaces the cached row.
        try node.archive.writer.write { db in try db.execute(sql: "UPDATE observations SET status = 'needs_review' WHERE id = 1") }
        #expect(try cache.refresh(from: node) == .targeted(observations: 1))
        #expect(try cache.observations().first?.status == "needs_review")

        // A full rebuild keeps settings.
        try cache.rebuild(from: node)
        #expect(try cache.setting("selected_types") == "HKQuantityTypeIdentifierHeartRate")
        #expect(try cache.observations().count == 3)
    }

    @Test("deleting the cache never touches the archive; a reset archive forces a full rebuild; an unreadable cache is recreated")
    func disposable() throws {
        let t = TempHome()
        var node: NodeArchive? = try t.open()
        try capture(node!, samples: (0..<10).map { hr($0) })
        let before = try Counts.of(node!)
        var cache: ArchiveCache? = try ArchiveCache.of(t.home)
        try cache!.refresh(from: node!)
        let path = cache!.path
        cache = nil
        try FileManager.default.removeItem(atPath: path)
        #expect(try Counts.of(node!) == before)
        let fresh = try ArchiveCache.of(t.home)
        #expect(try fresh.refresh(from: node!) == .full(reason: "empty cache"))

        // Reset the archive (keys kept: same chain, observations gone).
        node = nil
        try t.home.reset(newChain: false)
        let again = try t.open()
        #expect(try fresh.refresh(from: again) == .full(reason: "observations missing from the archive"))
        #expect(try fresh.observations().isEmpty)

        // Garbage in the cache file: recreated.
        try Data("not a database".utf8).write(to: URL(fileURLWithPath: path + ".tmp"))
        let garbage = path + ".tmp"
        let broken = try ArchiveCache(path: garbage)
        #expect(try broken.refresh(from: again) == .full(reason: "empty cache"))
    }
}
