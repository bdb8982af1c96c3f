import Foundation
import Logging
import NIOConcurrencyHelpers
import Testing
@testable import HealthProbeServer
import HealthProbeTestSupport

@Suite("Scheduled backups")
struct BackupServiceTests {
    @Test("every interval a backup into a dated directory, the newest `keep` kept and each counted in the metrics; a target in use is refused; a restored copy writes none")
    func scheduled() async throws {
        let data = TempDir(), backups = TempDir()
        let store = ServerStore(root: data.path)
        try store.create()
        let time = NIOLockedValueBox(1_795_927_204.0)
        let metrics = ServerMetrics()
        let service = BackupService(store: store, settings: .init(directory: backups.path + "/sets", interval: .milliseconds(50), keep: 2),
                                    clock: ContinuousClock(), now: { time.withLockedValue { $0 += 1; return $0 } }, logger: Logger(label: "test"), metrics: metrics)
        func count(_ result: String) -> Int {
            metrics.text().split(separator: "\n").first { $0.hasPrefix("hp_server_backups_total{result=\"\(result)\"} ") }
                .flatMap { Int($0.split(separator: " ").last ?? "") } ?? 0
        }
        // The loop, on its own clock: what it writes in a moment is whole backups (how many
        // depends on how busy the machine is, so none are counted here).
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await service.run() }
            try await Task.sleep(for: .milliseconds(300))
            group.cancelAll()
        }
        // Each interval's work: a backup, counted for the administrator's monitoring with its time.
        let before = count("written")
        await service.tick()
        await service.tick()
        #expect(count("written") == before + 2 && count("failed") == 0)
        #expect(metrics.text().contains("hp_server_backup_last_written_timestamp_seconds 1795927"), "\(metrics.text())")
        for _ in 0..<3 { _ = try service.backupOnce() }
        let kept = try FileManager.default.contentsOfDirectory(atPath: backups.path + "/sets").sorted()
        #expect(kept.count == 2)
        for name in kept {
            #expect(name.hasPrefix("20261129T"))
            #expect(FileManager.default.fileExists(atPath: backups.path + "/sets/\(name)/\(ServerBackup.manifestName)"))
            #expect(try ServerVerifier.run(ServerStore(root: backups.path + "/sets/\(name)"), mode: .quick).isEmpty)
        }
        #expect { try ServerBackup.run(store, to: backups.path + "/sets/" + kept[0]) } throws: { "\($0)".contains("not empty") }

        // A restored copy not adopted writes none (a drill's copy must not fill the live backups):
        // its intervals are counted as paused.
        try RestoredCopy.mark(data.path, source: "elsewhere", now: 0)
        await service.tick()
        await service.tick()
        #expect(count("paused") == 2 && count("failed") == 0)
        #expect(try FileManager.default.contentsOfDirectory(atPath: backups.path + "/sets").sorted() == kept)
    }
}
