import Foundation
import Logging
import Testing
@testable import HealthProbeServer
import HealthProbeTestSupport

@Suite("A data directory's home")
struct HomeDirectoryTests {
    /// `root`'s real path (symlinks resolved), as the record holds it.
    func real(_ root: String) -> String? { HomeDirectory.current(root)?.path }

    /// Writes a record of `record` into `root`, as a copy of another directory would hold.
    func write(_ record: HomeDirectory.Record, into root: String) throws {
        let object: [String: Any] = ["path": record.path, "device": record.device, "inode": record.inode]
        try JSONSerialization.data(withJSONObject: object).write(to: URL(fileURLWithPath: HomeDirectory.path(root)))
    }

    @Test("a data directory copied elsewhere (cp -a, tar, another disk) is a copy until adopted: no scheduled backup; a move within the file system, and the directory itself, are not")
    func copiedIsACopy() async throws {
        let dir = TempDir(), backups = TempDir()
        let live = dir.file("live"), moved = dir.file("moved"), copied = dir.file("copied")
        try ServerStore(root: live).create()
        #expect(RestoredCopy.paused(live) == nil)
        #expect(HomeDirectory.recorded(live)?.path == real(live))
        // `mv` within one file system keeps the directory (its inode): still the home, and
        // `serve` records the new path.
        try FileManager.default.moveItem(atPath: live, toPath: moved)
        #expect(RestoredCopy.paused(moved) == nil)
        try ServerStore(root: moved).refreshHome()
        #expect(HomeDirectory.recorded(moved)?.path == real(moved))

        try copyDirectory(moved, copied)
        let why = try #require(RestoredCopy.paused(copied))
        #expect(why.contains("copied or moved from \(real(moved) ?? "-")"), "\(why)")
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
        #expect(HomeDirectory.recorded(copied)?.path == real(copied))
        #expect(try !RestoredCopy.adopt(copied))
        await service.tick()
        #expect(metrics.text().contains("hp_server_backups_total{result=\"written\"} 1"), "\(metrics.text())")
    }

    @Test("the root of a disk of its own has the inode of every root: another file system at another path is a copy; at the same path (a reboot renumbering devices) it is not; a record replaced in place, unreadable or oversized pauses until adopted")
    func devicesAndRecords() throws {
        let dir = TempDir()
        let root = dir.file("data")
        try ServerStore(root: root).create()
        let here = try #require(HomeDirectory.current(root))
        // The same inode on another device, recorded at another path: a copy onto a disk of its own.
        try write(HomeDirectory.Record(path: "/mnt/live-disk", device: here.device &+ 1, inode: here.inode), into: root)
        #expect(RestoredCopy.paused(root)?.contains("copied from /mnt/live-disk (another file system)") == true)
        // The same inode and path, another device number: the same directory after a reboot.
        try write(HomeDirectory.Record(path: here.path, device: here.device &+ 1, inode: here.inode), into: root)
        #expect(RestoredCopy.paused(root) == nil)
        // Another inode at the same path: replaced in place.
        try write(HomeDirectory.Record(path: here.path, device: here.device, inode: here.inode &+ 1), into: root)
        #expect(RestoredCopy.paused(root)?.contains("another inode: copied or restored in place") == true)
        #expect(try RestoredCopy.adopt(root))
        #expect(RestoredCopy.paused(root) == nil)

        // A directory set up before homes were recorded: not a copy, recorded by `serve`'s first start.
        try FileManager.default.removeItem(atPath: HomeDirectory.path(root))
        #expect(RestoredCopy.paused(root) == nil)
        try ServerStore(root: root).refreshHome()
        #expect(HomeDirectory.recorded(root) == here)
        // A record that cannot be read, or is too large to be one, pauses until adopted; `serve` leaves it.
        for text in ["garbage", "{\"path\": \"" + String(repeating: "x", count: 5000) + "\", \"device\": 1, \"inode\": 2}"] {
            try Data(text.utf8).write(to: URL(fileURLWithPath: HomeDirectory.path(root)))
            let why = try #require(RestoredCopy.paused(root))
            #expect(why.contains("cannot be read") && why.count < 400, "\(why)")
            try ServerStore(root: root).refreshHome()
            #expect(RestoredCopy.paused(root) != nil)
            #expect(try RestoredCopy.adopt(root))
            #expect(RestoredCopy.paused(root) == nil)
        }
        // A record that is a directory: adopt says what to do.
        try FileManager.default.removeItem(atPath: HomeDirectory.path(root))
        try FileManager.default.createDirectory(atPath: HomeDirectory.path(root), withIntermediateDirectories: false)
        #expect(RestoredCopy.paused(root) != nil)
        #expect { try RestoredCopy.adopt(root) } throws: { "\($0)".contains("it is a directory: remove it") }
    }
}
