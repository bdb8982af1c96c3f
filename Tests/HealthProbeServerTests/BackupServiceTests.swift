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
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await service.run() }
            // Until two were written and counted (a directory appears before its backup is complete;
            // each runs on NIO's shared blocking pool, which the rest of the suite keeps busy).
            func written() -> Int {
                metrics.text().split(separator: "\n").first { $0.hasPrefix(#"hp_server_backups_total{result="written"} "#) }
                    .flatMap { Int($0.split(separator: " ").last ?? "") } ?? 0
            }
            let deadline = Date().addingTimeInterval(150)
            while Date() < deadline, written() < 2 { try await Task.sleep(for: .milliseconds(50)) }
            group.cancelAll()
            #expect(written() >= 2)
        }
        // Counted for the administrator's monitoring, with the time of the last one.
        let text = metrics.text()
        #expect(text.contains("hp_server_backup_last_written_timestamp_seconds 1795927"), "\(text)")
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
        // two intervals counted as paused, and no backup more.
        try RestoredCopy.mark(data.path, source: "elsewhere", now: 0)
        func paused() -> Int {
            metrics.text().split(separator: "\n").first { $0.hasPrefix(#"hp_server_backups_total{result="paused"} "#) }
                .flatMap { Int($0.split(separator: " ").last ?? "") } ?? 0
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await service.run() }
            let deadline = Date().addingTimeInterval(150)
            while Date() < deadline, paused() < 2 { try await Task.sleep(for: .milliseconds(50)) }
            group.cancelAll()
        }
        #expect(paused() >= 2)
        #expect(try FileManager.default.contentsOfDirectory(atPath: backups.path + "/sets").sorted() == kept)
    }
}
