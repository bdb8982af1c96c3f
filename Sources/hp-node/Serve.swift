import ArgumentParser
import Foundation
import HealthProbeArchive
import HealthProbeCLI
import HealthProbeImport
import HealthProbeIngest
import HealthProbeProtocol
import Logging
import ServiceLifecycle

/// `hp-node serve`: hands-off capture (docs/capture.md).
struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Capture without a shell: the Health Auto Export endpoint, a watched folder, and sync after each observation.",
        subcommands: [ServeRun.self, ServeStatusCommand.self], defaultSubcommand: ServeRun.self)
}

struct ServeRun: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "Run until SIGTERM or SIGINT (the default of `hp-node serve`).",
        discussion: """
            --ingest HOST:PORT serves POST /ingest/hae over HTTPS with the node's own certificate (made on first use, \
            kept in the key directory; its fingerprint is printed); keys come from `hp-node ingest-key create NAME`. \
            Each automation records into its own home, HOME/capture/hae-NAME, a chain of its own. --watch DIR imports \
            exports dropped there into this home. After each new observation the home is synced to its enrolled server \
            (enroll an automation's home with `hp-node --home HOME/capture/hae-NAME enroll TOKEN`), with backoff while the \
            server is unreachable. `hp-node serve status` shows what it is doing.
            """)

    @OptionGroup var options: HomeOptions

    @Option(name: .long, help: "Serve the Health Auto Export endpoint on HOST:PORT (port 0: any free port).")
    var ingest: String?

    @Flag(name: .long, help: "Serve the endpoint over plain HTTP (only on a network you trust: keys and health data cross it in clear).")
    var insecureHTTP = false

    @Option(name: .long, help: "Also name this host in the endpoint's certificate (repeatable), e.g. the name the phone uses.")
    var hostname: [String] = []

    @Option(name: .long, help: "Import exports dropped in this folder.")
    var watch: String?

    @Option(name: .long, help: "The phone's time zone, for windows such as yesterday (IANA name; default: this machine's).")
    var timeZone: String?

    @Option(name: .long, help: "The largest body accepted, in MiB.")
    var maxBodyMiB: Int = 64

    func validate() throws {
        if ingest == nil && watch == nil { throw ValidationError("give --ingest HOST:PORT, --watch DIR, or both") }
        if let ingest, SyncAddress.parse(ingest, allowAnyPort: true) == nil { throw ValidationError("--ingest must be HOST:PORT, got \(ingest)") }
        if insecureHTTP && ingest == nil { throw ValidationError("--insecure-http is about --ingest; give it too") }
        if let timeZone, TimeZone(identifier: timeZone) == nil { throw ValidationError("--time-zone \(timeZone) is not an IANA time zone (e.g. Europe/Berlin)") }
        guard (1...1024).contains(maxBodyMiB) else { throw ValidationError("--max-body-mib must be between 1 and 1024") }
        if let watch {
            var dir: ObjCBool = false
            guard FileManager.default.fileExists(atPath: watch, isDirectory: &dir), dir.boolValue else { throw ValidationError("--watch \(watch) is not a directory") }
        }
        for h in hostname where h.isEmpty || h.utf8.count > 253 || h.contains(" ") { throw ValidationError("--hostname \(h) is not a host name") }
    }

    func run() async throws {
        let logger = NodeLogging.logger()
        let home = options.resolvedHome
        let archives = OpenArchives()
        _ = try archives.node(home)  // creates the node's home, keys and chain on first use
        let homes = CaptureHomes(home: home)
        let now: @Sendable () -> Double = { Date().timeIntervalSince1970 }
        let zone = timeZone.flatMap(TimeZone.init(identifier:)) ?? TimeZone.current
        var initial = ServeStatus.Snapshot()
        initial.pid = getpid()
        initial.startedAt = now()
        initial.watch = watch
        initial.ingestEncrypted = !insecureHTTP
        let status = ServeStatus(path: home.root + "/serve-status.json", initial: initial)
        let queue = SyncQueue()
        let root = home.root
        let surfaceName: @Sendable (String) -> String = { $0 == root ? "import" : ($0 as NSString).lastPathComponent }
        var services: [ServiceGroupConfiguration.ServiceConfiguration] = []
        services.append(.init(service: CaptureSync(queue: queue, archives: archives, status: status, surfaceName: surfaceName, clock: ContinuousClock(), now: now, logger: logger)))
        // Whatever a home holds unsent (a stop before its sync) goes at start.
        for name in homes.automations() { queue.due(homes.automation(name).root, now: now()) }
        queue.due(home.root, now: now())
        if let ingest, let (host, port) = SyncAddress.parse(ingest, allowAnyPort: true) {
            let processor = IngestProcessor(homes: homes, archives: archives, logger: logger, utcOffset: { zone.secondsFromGMT(for: Date(timeIntervalSince1970: $0)) })
            let recovered = try await processor.recoverPending()
            if recovered > 0 { announce("recorded \(recovered) body(ies) kept before a stop") }
            let identity = insecureHTTP ? nil : try IngestIdentity.loadOrCreate(home.keyStore, hostnames: hostname, now: Date(timeIntervalSince1970: now()))
            if let identity { report(identity, status: status, logger: logger, now: now()) }
            var settings = IngestServer.Settings()
            settings.maxBodyBytes = maxBodyMiB << 20
            let server = IngestServer(keys: IngestKeys(keys: home.keyStore), processor: processor, settings: settings, logger: logger, now: now) { name in
                queue.due(homes.automation(name).root, now: now())
                status.update(now: now()) { s in
                    s.surfaces["hae-" + name, default: .init()].captures += 1
                    s.surfaces["hae-" + name, default: .init()].lastCaptureAt = now()
                }
            }
            services.append(.init(service: try server.application(host: host, port: port, identity: identity) { bound in
                let scheme = identity == nil ? "http" : "https"
                status.update(now: now()) { s in
                    s.ingest = "\(scheme)://\(host):\(bound)/ingest/hae"
                    s.ingestCertificateFingerprint = identity?.fingerprint
                }
                announce("ingest on \(scheme)://\(host):\(bound)/ingest/hae" + (identity.map { " (certificate sha256 \($0.fingerprint); the phone trusts \($0.authorityFile))" } ?? " (plain HTTP)"))
            }))
        }
        if let watch {
            services.append(.init(service: FolderWatch(directory: watch, home: home, queue: queue, archives: archives, status: status, clock: ContinuousClock(), now: now, logger: logger)))
            announce("watching \(watch)")
        }
        let group = ServiceGroup(configuration: .init(services: services, gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
        try await group.run()
        status.update(now: now()) { $0.stoppedAt = now() }
    }

    /// Says what loading the ingest certificate did (a re-issue, warnings) on stdout, in the
    /// log and in the status. Fingerprints and dates only: no key material.
    func report(_ identity: IngestIdentity, status: ServeStatus, logger: Logger, now: Double) {
        if let r = identity.reissue {
            logger.notice("ingest certificate re-issued from the same authority", metadata: [
                "reason": "\(r.reason.rawValue)", "fingerprint": "\(identity.fingerprint)", "expires": "\(Output.date(identity.expiresAt))",
                "previous_fingerprint": "\(r.previousFingerprint ?? "-")", "previous": "\(r.previousKept)"])
            announce("ingest certificate re-issued (\(r.reason.rawValue)) from the same authority: sha256 \(identity.fingerprint), valid until \(Output.date(identity.expiresAt)); "
                     + "the phone needs nothing new; previous: \(r.previousKept)")
        }
        for w in identity.warnings {
            logger.warning("ingest certificate: \(w)")
            announce("warning: \(w)")
        }
        status.update(now: now) { s in
            s.ingestCertificateExpiresAt = identity.expiresAt
            s.ingestAuthorityExpiresAt = identity.authorityExpiresAt
            s.ingestCertificateReissued = identity.reissue.map {
                ServeStatus.CertificateReissue(at: now, reason: $0.reason.rawValue, previousFingerprint: $0.previousFingerprint, previousExpiresAt: $0.previousExpiresAt, previousKept: $0.previousKept)
            }
            s.ingestCertificateWarnings = identity.warnings.isEmpty ? nil : identity.warnings
        }
    }

    /// A line on stdout, flushed (scripts wait for it).
    func announce(_ line: String) {
        print(line)
        fflush(nil)
    }
}

struct ServeStatusCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "status", abstract: "What `hp-node serve` is doing (or did last): endpoint, captures, syncs, errors.")

    @OptionGroup var options: HomeOptions

    func run() async throws {
        let path = options.resolvedHome.root + "/serve-status.json"
        guard let s = ServeStatus.read(path: path) else {
            throw ValidationError("`hp-node serve` has not run with this home (no \(path))")
        }
        if options.json { try Output.json(s); return }
        let running = s.stoppedAt == nil && kill(s.pid, 0) == 0
        print(running ? "running (pid \(s.pid)) since \(Output.date(s.startedAt))" : "not running; last stopped \(s.stoppedAt.map(Output.date) ?? "without a clean stop")")
        if let ingest = s.ingest { print("ingest: \(ingest)\(s.ingestCertificateFingerprint.map { " (certificate sha256 \($0))" } ?? "")") }
        if let expires = s.ingestCertificateExpiresAt {
            print("ingest certificate valid until \(Output.date(expires)); its authority until \(Output.date(s.ingestAuthorityExpiresAt))"
                  + (s.ingestCertificateReissued.map { "; re-issued \(Output.date($0.at)) (\($0.reason)), previous: \($0.previousKept)" } ?? ""))
        }
        for w in s.ingestCertificateWarnings ?? [] { print("warning: \(w)") }
        if let watch = s.watch {
            print("watching \(watch): \(s.folder.imported) imported, \(s.folder.failed) failed" + (s.folder.lastFailure.map { "; last failure: \($0)" } ?? ""))
        }
        let rows = s.surfaces.keys.sorted().map { name -> [String] in
            let x = s.surfaces[name]!
            return [name, String(x.captures), x.lastCaptureAt.map(Output.date) ?? "-", x.lastSyncAt.map(Output.date) ?? "-",
                    x.lastSyncError ?? (x.enrolled == false ? "not enrolled" : "-")]
        }
        var table = TextTable(["surface", "captures", "last capture", "last sync", "last error"], rightAligned: [1])
        rows.forEach { table.add($0) }
        if !rows.isEmpty { print(table.render()) }
    }
}
