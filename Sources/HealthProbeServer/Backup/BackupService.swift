import Foundation
import HealthProbeArchive
import Logging
import ServiceLifecycle

/// Scheduled backups (config `backup_to`): every `interval` a backup into
/// `<directory>/<UTC time>`, keeping the newest `keep`. Each runs on a thread of its own,
/// never on Swift's cooperative threads nor NIO's shared pool; the first one after one interval.
public struct BackupService<C: Clock>: Service where C.Duration == Duration {
    public struct Settings: Sendable {
        public var directory: String
        public var interval: Duration
        public var keep: Int
        public init(directory: String, interval: Duration, keep: Int) {
            self.directory = directory
            self.interval = interval
            self.keep = keep
        }
    }

    let store: ServerStore
    let settings: Settings
    let clock: C
    let now: @Sendable () -> Double
    let logger: Logger
    let metrics: ServerMetrics?

    public init(store: ServerStore, settings: Settings, clock: C, now: @escaping @Sendable () -> Double, logger: Logger, metrics: ServerMetrics? = nil) {
        self.metrics = metrics
        self.store = store
        self.settings = settings
        self.clock = clock
        self.now = now
        self.logger = logger
    }

    public func run() async throws {
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            do { try await cancelWhenGracefulShutdown { try await clock.sleep(for: settings.interval) } } catch { break }
            if Task.isShuttingDownGracefully { break }
            await tick()
        }
    }

    /// One interval's work: a backup (logged and counted, a failure too), or none while the
    /// data directory is a copy not adopted (counted as paused).
    public func tick() async {
        if let notice = RestoredCopy.notice(store.root, "scheduled backups", bucket: false) {
            logger.warning("\(notice)")
            metrics?.backupPaused()
            return
        }
        do {
            // A backup copies every replica (seconds to minutes): on a thread of its own, never
            // on NIO's small shared pool, whose threads the sync sessions' registry work needs.
            let report = try await StageThread.run(name: "healthprobe.backup") { [self] in try backupOnce() }
            logger.info("backup written", metadata: ["target": "\(report.target)", "chains": "\(report.chains.count)",
                                                     "seconds": "\(String(format: "%.1f", report.seconds))"])
            metrics?.backup(ok: true, now: now())
        } catch {
            logger.error("scheduled backup failed", metadata: ["directory": "\(settings.directory)", "error": "\(error)"])
            metrics?.backup(ok: false, now: now())
        }
    }

    /// One backup into a new dated directory, then the oldest beyond `keep` removed.
    public func backupOnce() throws -> ServerBackup.Report {
        try PrivateFiles.makeDirectory(settings.directory)
        let name = String(OffsiteKeys.snapshot(at: now()).dropFirst("snapshots/".count))
        let report = try ServerBackup.run(store, to: settings.directory + "/" + name, now: now())
        let fm = FileManager.default
        // Only complete backups this service named are counted and removed.
        let backups = try fm.contentsOfDirectory(atPath: settings.directory)
            .filter { $0.count == name.count && $0.hasSuffix("Z") && fm.fileExists(atPath: settings.directory + "/" + $0 + "/" + ServerBackup.manifestName) }
            .sorted()
        for old in backups.dropLast(max(1, settings.keep)) { try? fm.removeItem(atPath: settings.directory + "/" + old) }
        return report
    }
}
