import ArgumentParser
import Foundation
import HealthProbeArchive
import HealthProbeServer
import HealthProbeWeb
import HealthProbeProtocol
import Logging
import NIOConcurrencyHelpers
import NIOCore
import ServiceLifecycle

struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Serve the sync protocol over TLS on HOST:PORT (Protocol/README.md).",
        discussion: "Only enrolled devices (hp-server enroll) are served; each writes only the chains it created. Bundles are verified and applied in one transaction each, then acknowledged. SIGTERM or Ctrl-C shuts down gracefully: a bundle being applied finishes (or was never started); a bundle still arriving is discarded with its quarantine file. Settings come from <data>/config.json (or --config); options given here override it.")

    @OptionGroup var options: DataOptions

    @Option(name: .long, help: "Address to listen on, HOST:PORT (port 0: any free port, printed). Default: config, else 127.0.0.1:7447.")
    var listen: String?

    @Option(name: .long, help: "Serve Prometheus metrics at http://HOST:PORT/metrics (keep it on loopback). Default: config, else off.")
    var metrics: String?

    @Option(name: .long, help: "Serve the household's web dashboard and JSON API over HTTPS on HOST:PORT (port 0: any free port, printed). Default: config, else off.")
    var web: String?

    @Option(name: .long, help: "Config file (JSON; default <data>/config.json).")
    var config: String?

    @Option(name: .long, help: "Replicas kept open between bundles, about 1-1.5 MB each (default: config, else 64).")
    var keptReplicas: Int?

    @Option(name: .long, help: "Threads verifying and applying bundles (default: config, else cores + 1).")
    var applyThreads: Int?

    @Option(name: .customLong("disk-reserve-mib"), help: "MiB of the data directory's disk kept free: bundles are refused (storage, retried later) below it (default: config, else 1024).")
    var diskReserveMiB: Int?

    func validate() throws {
        if let listen, SyncAddress.parse(listen, allowAnyPort: true) == nil { throw ValidationError("--listen must be HOST:PORT, got \(listen)") }
        if let metrics, SyncAddress.parse(metrics, allowAnyPort: true) == nil { throw ValidationError("--metrics must be HOST:PORT, got \(metrics)") }
        if let web, SyncAddress.parse(web, allowAnyPort: true) == nil { throw ValidationError("--web must be HOST:PORT, got \(web)") }
        if let keptReplicas, !ServerConfig.keptReplicasRange.contains(keptReplicas) {
            throw ValidationError("--kept-replicas must be \(ServerConfig.keptReplicasRange), got \(keptReplicas)")
        }
        if let applyThreads, !ServerConfig.applyThreadsRange.contains(applyThreads) {
            throw ValidationError("--apply-threads must be \(ServerConfig.applyThreadsRange), got \(applyThreads)")
        }
        if let diskReserveMiB, !ServerConfig.diskReserveMiBRange.contains(diskReserveMiB) {
            throw ValidationError("--disk-reserve-mib must be \(ServerConfig.diskReserveMiBRange), got \(diskReserveMiB)")
        }
    }

    func run() async throws {
        let settings = try ServerConfig.load(dataDirectory: options.data, path: config)
        let listenAddress = listen ?? settings.listen ?? "127.0.0.1:7447"
        guard let (host, port) = SyncAddress.parse(listenAddress, allowAnyPort: true) else { throw ValidationError("listen address \(listenAddress) is not HOST:PORT") }
        let metricsAddress = metrics ?? settings.metricsListen
        let level = ProcessInfo.processInfo.environment["HP_LOG_LEVEL"].flatMap(Logger.Level.init(rawValue:))
            ?? settings.logLevel.flatMap(Logger.Level.init(rawValue:)) ?? .info
        LoggingSystem.bootstrap { label in
            var h = StreamLogHandler.standardError(label: label)
            h.logLevel = level
            return h
        }
        let logger = Logger(label: "healthprobe.server")
        // The serving lock before any service starts: a scheduled verification or compaction
        // that ran first would take it, and the listener would find it held.
        try options.store.requireInitialized()
        let servingLock = try options.store.lockServing()
        try options.store.refreshHome()
        let serverMetrics = ServerMetrics()
        let server = try SyncServer(store: options.store, logger: logger,
                                    helloTimeout: .milliseconds(Int64((settings.helloTimeoutSeconds ?? 10) * 1000)),
                                    idleTimeout: .milliseconds(Int64((settings.idleTimeoutSeconds ?? 120) * 1000)),
                                    metrics: serverMetrics, keptReplicas: keptReplicas ?? settings.keptReplicas ?? ServerConfig.defaultKeptReplicas,
                                    applyThreads: applyThreads ?? settings.applyThreads ?? ServerConfig.defaultApplyThreads,
                                    offsiteUploads: settings.objectStore != nil,
                                    diskReserveBytes: (diskReserveMiB.map(Int64.init) ?? settings.diskReserveMiB ?? ServerConfig.defaultDiskReserveMiB) << 20)
        // What enrollment tokens from the web page carry: the advertised address, else the bound one.
        let boundAddress = NIOLockedValueBox(settings.advertise ?? listenAddress)
        var services: [ServiceGroupConfiguration.ServiceConfiguration] = [.init(service: ListenerService {
            try await server.run(host: host, port: port, lock: servingLock) { bound in
                if settings.advertise == nil { boundAddress.withLockedValue { $0 = "\(host):\(bound)" } }
                announce("listening on \(host):\(bound)")
            }
        })]
        if let metricsAddress, let (mh, mp) = SyncAddress.parse(metricsAddress, allowAnyPort: true) {
            services.append(.init(service: ListenerService {
                try await serverMetrics.serve(host: mh, port: mp) { announce("metrics on http://\(mh):\($0)/metrics") }
            }))
        }
        if let webAddress = web ?? settings.webListen, let (wh, wp) = SyncAddress.parse(webAddress, allowAnyPort: true) {
            var webSettings = WebServer.Settings()
            webSettings.syncAddress = { boundAddress.withLockedValue { $0 } }
            webSettings.alertSender = .shared(smtp: settings.smtp)
            let webServer = try WebServer(store: options.store, settings: webSettings, logger: Logger(label: "healthprobe.web"))
            services.append(.init(service: try webServer.application(host: wh, port: wp) { port in
                let shown = wh.contains(":") ? "[\(wh)]" : wh
                announce("dashboard on https://\(shown):\(port)/")
            }))
            // The household's cross-chain overlaps, computed ahead of the first view.
            services.append(.init(service: webServer.overlapWarmer()))
        }
        // Alerts: evaluated every minute (`alerts.evaluate_seconds`), delivered through the registry's outbox (docs/alerts.md).
        var alertSettings = AlertService<ContinuousClock>.Settings()
        alertSettings.interval = .milliseconds(Int64((settings.alerts.evaluateSeconds * 1000).rounded()))
        if let webAddress = web ?? settings.webListen { alertSettings.pageBase = "https://\(webAddress)" }
        var serverConditions = settings.alerts.serverConditions(dataDirectory: options.data, certificateFile: options.store.certificatePath)
        serverConditions.startedAt = Date().timeIntervalSince1970
        // One interval for the schedule and for the alert that watches it.
        let backupSeconds = (settings.backupIntervalHours ?? 24) * 3600
        serverConditions.scheduledBackups = settings.backupTo.map { ($0, backupSeconds) }
        serverConditions.offsiteUploads = settings.objectStore != nil
        serverConditions.offsiteSnapshotInterval = settings.s3SnapshotSeconds ?? 300
        alertSettings.server = serverConditions
        alertSettings.verify = settings.alerts.scheduledVerify(store: options.store)
        services.append(.init(service: AlertService(registry: try options.store.registry(), sender: .shared(smtp: settings.smtp), settings: alertSettings,
                                                    clock: ContinuousClock(), now: { Date().timeIntervalSince1970 }, logger: Logger(label: "healthprobe.alerts"), metrics: serverMetrics,
                                                    lossScan: LossScan(store: options.store, limit: LossScan.limit(roundSeconds: settings.alerts.evaluateSeconds)))))
        // Backups (docs/operations.md): scheduled copies, and bundles off the machine.
        if let directory = settings.backupTo {
            guard !DataDirectory.contains(options.data, directory) else {
                throw ValidationError("config.json's backup_to \(directory) lies inside the data directory \(options.data): a backup there would be lost with the disk "
                                      + "it is meant to outlive; name a directory elsewhere (the systemd unit lets hp-server write /var/backups/healthprobe)")
            }
            let backup = BackupService<ContinuousClock>.Settings(directory: directory, interval: .seconds(backupSeconds), keep: settings.backupKeep ?? 7)
            services.append(.init(service: BackupService(store: options.store, settings: backup, clock: ContinuousClock(),
                                                         now: { Date().timeIntervalSince1970 }, logger: Logger(label: "healthprobe.backup"), metrics: serverMetrics)))
        }
        if let objectStore = settings.objectStore {
            var offsite = OffsiteService<ContinuousClock>.Settings()
            if let s = settings.s3SnapshotSeconds { offsite.snapshotInterval = .seconds(s) }
            if let k = settings.s3KeepSnapshots { offsite.keepSnapshots = k }
            let uploader = OffsiteUploader(store: options.store, registry: try options.store.registry(), objects: ObjectStore(settings: objectStore))
            services.append(.init(service: OffsiteService(uploader: uploader, settings: offsite, clock: ContinuousClock(),
                                                          now: { Date().timeIntervalSince1970 }, logger: Logger(label: "healthprobe.offsite"), metrics: serverMetrics)))
        }
        let group = ServiceGroup(configuration: .init(services: services, gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
        try await group.run()
        withExtendedLifetime(servingLock) {}
        logger.info("sync server stopped")
    }
}

/// A listener as a `Service`: a graceful shutdown cancels it. For the sync
/// server that cancels the accept loop and the connection tasks; applies are
/// transactions, so none is left half done.
struct ListenerService: Service {
    let body: @Sendable () async throws -> Void

    func run() async throws {
        do {
            try await cancelWhenGracefulShutdown { try await body() }
        } catch is CancellationError {
            // Graceful shutdown.
        }
    }
}

/// Writes a line to stdout unbuffered, so a supervisor or script reading a pipe sees it at once.
func announce(_ line: String) { FileHandle.standardOutput.write(Data((line + "\n").utf8)) }
