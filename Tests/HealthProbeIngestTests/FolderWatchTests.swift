import Foundation
import HealthProbeArchive
import HealthProbeIngest
import HealthProbeSimulator
import HealthProbeTestSupport
import Testing
import ZIPFoundation

/// The watched folder with real files: an export imported once, a file still being
/// written left alone until it is whole, a truncated zip and a zip bomb refused with a reason.
@Suite("Watched folder", .serialized)
struct FolderWatchTests {
    /// Waits until `done` holds (at most 30 s).
    func until(_ done: () -> Bool) async throws {
        for _ in 0..<600 where !done() { try await Task.sleep(for: .milliseconds(50)) }
    }

    @Test("a whole export is imported and moved; a growing file waits; a truncated zip and a zip bomb go to failed/ with their reasons")
    func folder() async throws {
        let dir = TempDir()
        let inbox = dir.path + "/inbox", root = dir.path + "/home"
        try FileManager.default.createDirectory(atPath: inbox, withIntermediateDirectories: true)
        let home = ArchiveHome(root: root)
        _ = try home.open()
        let status = ServeStatus(path: root + "/serve-status.json", initial: .init())
        var settings = FolderWatch<ContinuousClock>.Settings()
        settings.interval = .milliseconds(100)
        let watch = FolderWatch(directory: inbox, home: home, queue: SyncQueue(), archives: OpenArchives(), status: status, settings: settings, clock: ContinuousClock(),
                                now: { Date().timeIntervalSince1970 }, logger: quietLogger)
        let fm = FileManager.default
        // Made outside the folder first, as a phone's sync client would.
        try QuirkyExport().writeZip(to: dir.path + "/whole.zip")
        let whole = try #require(fm.contents(atPath: dir.path + "/whole.zip"))
        try whole.prefix(whole.count / 2).write(to: URL(fileURLWithPath: inbox + "/truncated.zip"))
        // A zip bomb: 64 MiB of zeros in one deflated entry.
        let bomb = try ZIPFoundation.Archive(url: URL(fileURLWithPath: inbox + "/bomb.zip"), accessMode: .create)
        let chunk = Data(count: 1 << 20)
        try bomb.addEntry(with: "apple_health_export/export.xml", type: .file, uncompressedSize: Int64(64 << 20), compressionMethod: .deflate) { _, size in chunk.prefix(size) }

        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await watch.run() }
            defer { group.cancelAll() }
            // A file still being written: it grows for a while and must not be touched meanwhile.
            let xml = QuirkyExport().xml
            let growing = inbox + "/growing.xml"
            fm.createFile(atPath: growing, contents: nil)
            let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: growing))
            let bytes = Array(xml.utf8)
            let step = max(bytes.count / 20, 1)
            for start in stride(from: 0, to: bytes.count, by: step) {
                try handle.write(contentsOf: bytes[start..<min(start + step, bytes.count)])
                try await Task.sleep(for: .milliseconds(40))
                #expect(fm.fileExists(atPath: growing), "taken while still being written")
            }
            try handle.close()
            try fm.copyItem(atPath: dir.path + "/whole.zip", toPath: inbox + "/export.zip")
            try await until { status.snapshot.folder.imported + status.snapshot.folder.failed >= 4 }
        }
        #expect(status.snapshot.folder.imported == 2 && status.snapshot.folder.failed == 2, "\(status.snapshot.folder)")
        #expect(fm.fileExists(atPath: inbox + "/imported/export.zip") && fm.fileExists(atPath: inbox + "/imported/growing.xml"))
        let truncated = try String(contentsOfFile: inbox + "/failed/truncated.zip.reason.txt", encoding: .utf8)
        #expect(truncated.contains("truncated or damaged"), "\(truncated)")
        let bombReason = try String(contentsOfFile: inbox + "/failed/bomb.zip.reason.txt", encoding: .utf8)
        #expect(bombReason.contains("zip bomb"), "\(bombReason)")
        #expect(try fm.contentsOfDirectory(atPath: inbox).sorted() == ["failed", "imported"])
        let node = try home.open(mode: .readOnly)
        #expect(try await node.archive.latestObservationID(chain: node.deviceChainID) == 2)
    }

    @Test("a zip whose central directory lies (declares 1 MiB, inflates to 64 MiB) goes to failed/ with the reason, nothing archived; a normal export after it imports")
    func lyingZip() async throws {
        let dir = TempDir()
        let inbox = dir.path + "/inbox", root = dir.path + "/home"
        try FileManager.default.createDirectory(atPath: inbox, withIntermediateDirectories: true)
        let home = ArchiveHome(root: root)
        _ = try home.open()
        let status = ServeStatus(path: root + "/serve-status.json", initial: .init())
        var settings = FolderWatch<ContinuousClock>.Settings()
        settings.interval = .milliseconds(100)
        let watch = FolderWatch(directory: inbox, home: home, queue: SyncQueue(), archives: OpenArchives(), status: status, settings: settings, clock: ContinuousClock(),
                                now: { Date().timeIntervalSince1970 }, logger: quietLogger)
        let fm = FileManager.default
        try CraftedZip.write(to: dir.path + "/lying.zip", actualBytes: 64 << 20, declaredBytes: 1 << 20)
        try QuirkyExport().writeZip(to: dir.path + "/whole.zip")
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await watch.run() }
            defer { group.cancelAll() }
            try fm.moveItem(atPath: dir.path + "/lying.zip", toPath: inbox + "/lying.zip")
            try await until { status.snapshot.folder.failed >= 1 }
            let node = try home.open(mode: .readOnly)
            #expect(try Counts.of(node).samples == 0, "nothing of the lying zip archived")
            try fm.moveItem(atPath: dir.path + "/whole.zip", toPath: inbox + "/export.zip")
            try await until { status.snapshot.folder.imported >= 1 }
        }
        #expect(status.snapshot.folder.imported == 1 && status.snapshot.folder.failed == 1, "\(status.snapshot.folder)")
        let reason = try String(contentsOfFile: inbox + "/failed/lying.zip.reason.txt", encoding: .utf8)
        #expect(reason.contains("inflates to more than the 1048576 bytes the zip declares"), "\(reason)")
        #expect(fm.fileExists(atPath: inbox + "/imported/export.zip"))
        #expect(try Counts.of(try home.open(mode: .readOnly)).samples > 0)
    }
}
