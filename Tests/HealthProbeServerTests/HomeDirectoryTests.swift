import Foundation
import Logging
import Testing
@testable import HealthProbeServer
import HealthProbeTestSupport

@Suite("A data directory's home")
struct HomeDirectoryTests {
    /// Runs `/bin/cp -a FROM TO`, as an administrator copies a live data directory.
    func copy(_ from: String, _ to: String) throws {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/bin/cp")
        p.arguments = ["-a", from, to]
        try p.run()
        p.waitUntilExit()
        #expect(p.terminationStatus == 0)
    }

    @Test("a data directory copied elsewhere (cp -a, tar, another disk) is a copy until adopted: no scheduled backup; a move within the file system, and the directory itself, are not")
    func copiedIsACopy() async throws {
        let dir = TempDir(), backups = TempDir()
        let live = dir.file("live"), moved = dir.file("moved"), copied = dir.file("copied")
        try ServerStore(root: live).create()
        #expect(RestoredCopy.paused(live) == nil)
        #expect(HomeDirectory.recorded(live)?.path == live)
        // `mv` within one file system keeps the directory (its inode): still the home.
        try FileManager.default.moveItem(atPath: live, toPath: moved)
        #expect(RestoredCopy.paused(moved) == nil)

        try copy(moved, copied)
        let why = try #require(RestoredCopy.paused(copied))
        #expect(why.contains("copied or moved from \(live)"), "\(why)")
        #expect(RestoredCopy.paused(moved) == nil)
        // The copy's scheduled backups pause, as a restored copy's do.
        let metrics = ServerMetrics()
        let service = BackupService(store: ServerStore(root: copied), settings: .init(directory: backups.path + "/sets", interval: .seconds(3600), keep: 2),
                                    clock: ContinuousClock(), now: { 1_795_927_204 }, logger: Logger(label: "test"), metrics: metrics)
        await service.tick()
        #expect(metrics.text().contains("hp_server_backups_total{result=\"paused\"} 1"), "\(metrics.text())")
        #expect(!FileManager.default.fileExists(atPath: backups.path + "/sets"))

        // Adopted, it is the home: backups run; adopting again changes nothing.
        #expect(try RestoredCopy.adopt(copied))
        #expect(RestoredCopy.paused(copied) == nil)
        #expect(HomeDirectory.recorded(copied)?.path == copied)
        #expect(try !RestoredCopy.adopt(copied))
        await service.tick()
        #expect(metrics.text().contains("hp_server_backups_total{result=\"written\"} 1"), "\(metrics.text())")

        // A directory set up before homes were recorded: not a copy, and recorded by `serve`'s first start.
        try FileManager.default.removeItem(atPath: HomeDirectory.path(moved))
        #expect(RestoredCopy.paused(moved) == nil)
        try ServerStore(root: moved).recordHomeIfMissing()
        #expect(HomeDirectory.recorded(moved)?.path == moved)
        // A record that cannot be read pauses, until adopted.
        try Data("garbage".utf8).write(to: URL(fileURLWithPath: HomeDirectory.path(moved)))
        #expect(RestoredCopy.paused(moved)?.contains("cannot be read") == true)
        try ServerStore(root: moved).recordHomeIfMissing()
        #expect(RestoredCopy.paused(moved) != nil)
        #expect(try RestoredCopy.adopt(moved))
        #expect(RestoredCopy.paused(moved) == nil)
    }
}
