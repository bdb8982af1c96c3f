import ArgumentParser
import Foundation
import HealthProbeArchive
import HealthProbeCLI
import HealthProbeSimulator
import HealthProbeNode
import HealthProbeServer
import HealthProbeProtocol

/// `hp-bench sync --samples N`: a node with one N-sample observation and a
/// release `hp-server` in its own process on 127.0.0.1 (TLS, an enrolled device); measures the first sync end to end
/// (build, verify, send, the server's verify and apply), then the sync of a
/// 1,000-change observation; then deletes the node's archive (keeping its keys, as
/// `hp-node reset --keep-chain`) and measures `hp-node restore` of every bundle (the release
/// binary in its own process); last, the
/// stopped server's data directory is rebuilt by `hp-server restore --from DIR`, and with
/// `--s3-endpoint` from the bucket the server uploaded to as well. Rates are compared with
/// the node's first capture of the same samples in the same run; that capture is measured
/// again last (phase `first_capture_again`, into a new home), and the table gives each rate
/// against the mean of the two as well: this machine's speed moves within a run, and the
/// two captures bracket the phases between them.
struct SyncBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "sync", abstract: "Measure sync over TCP on 127.0.0.1.")

    @Option(name: .long, help: "Samples in the first observation.")
    var samples: Int = 100_000

    @Option(name: .long, help: "Incremental syncs to run (each after its own 1,000-sample observation); the table shows each.")
    var rounds: Int = 1

    @Option(name: .long, help: "An S3-compatible endpoint (http://HOST:PORT) the server also uploads every bundle to; the last phase then rebuilds from that bucket too. Keys from HP_BENCH_S3_ACCESS_KEY and HP_BENCH_S3_SECRET_KEY.")
    var s3Endpoint: String?

    @Option(name: .long, help: "The bucket for --s3-endpoint (made when missing); each run writes under a prefix of its own.")
    var s3Bucket: String = "hp-bench"

    @OptionGroup var bench: BenchOptions

    /// The object store of `--s3-endpoint`, under a prefix of this run's own.
    func objectStore() throws -> ObjectStoreSettings? {
        guard let s3Endpoint else { return nil }
        let env = ProcessInfo.processInfo.environment
        guard let access = env["HP_BENCH_S3_ACCESS_KEY"], let secret = env["HP_BENCH_S3_SECRET_KEY"] else {
            throw ValidationError("--s3-endpoint needs HP_BENCH_S3_ACCESS_KEY and HP_BENCH_S3_SECRET_KEY in the environment")
        }
        return ObjectStoreSettings(endpoint: s3Endpoint, bucket: s3Bucket, prefix: "sync-\(UUID().uuidString.prefix(8).lowercased())", region: "us-east-1",
                                   accessKey: access, secretKey: secret)
    }

    /// The server's `s3_*` config keys for `settings` (a registry snapshot every second).
    static func config(_ settings: ObjectStoreSettings) -> [String: Any] {
        ["s3_endpoint": settings.endpoint, "s3_bucket": settings.bucket, "s3_prefix": settings.prefix, "s3_region": settings.region,
         "s3_access_key": settings.accessKey, "s3_secret_key": settings.secretKey, "s3_snapshot_seconds": 1]
    }

    struct Result: Codable {
        var phase: String
        var samples: Int
        var seconds: Double
        var samplesPerSecond: Double
        var bytesOnWire: Int
        var uncompressedBytes: Int
        var compressionRatio: Double
        /// BUNDLE_END to BUNDLE_ACK: the server's verify and apply.
        var ackSeconds: Double
        /// The node's building, part checks and sending of the bundle (SyncClient.Report).
        var buildSeconds: Double
        var checkSeconds: Double
        var sendSeconds: Double
        var nodePeakRssBytes: Int64
        /// The server process's peak since it started (VmHWM).
        var serverPeakRssBytes: Int64
        /// CPU seconds (user + system) the phase used: the node's (this process, or
        /// `hp-node restore`'s) and the server's (its `serve` process, or `hp-server restore`).
        var nodeCpuSeconds: Double = 0
        var serverCpuSeconds: Double = 0
        /// The shortest wall time this machine's cores allow for that CPU:
        /// (node + server CPU) / cores.
        var cpuFloorSeconds: Double = 0
    }

    func run() async throws {
        let root = bench.workDirectory("sync")
        defer { bench.cleanUp(root) }
        let home = ArchiveHome(root: root + "/node")
        let clock = ManualClock(1_750_000_000)
        var results = [try await capture("first_capture", home: home, clock: clock)]
        let s3 = try objectStore()
        if let s3 { try await ObjectStore(settings: s3).createBucket() }
        // Alerts hourly: the first round after the start would fall inside a measured phase, with
        // the quick verification a chain gets in the first round that sees it (seconds of the
        // server's CPU at a million samples, measured as part of the node's restore before).
        let server = try BenchServer.start(data: root + "/server", config: (s3.map(Self.config) ?? [:]).merging(["alerts": ["evaluate_seconds": 3600]]) { a, _ in a })
        defer { server.stop() }
        let enrollment = try await server.enroll("bench")
        let phases = [("first_sync", samples)] + (0..<max(rounds, 1)).map { _ in ("incremental_sync_1000_changes", 1000) }
        var offset = samples
        for (phase, count) in phases {
            if phase != "first_sync" {
                clock.advance(3600)
                try bench.captureHeartRate(home: home, clock: clock, count: count, offset: offset)
                offset += count
            }
            Measure.resetPeakRSS()
            let node = try home.open(clock: clock)
            let nodeCPU = Measure.cpuSeconds(pid: getpid()), serverCPU = server.cpuSeconds
            let (report, seconds) = try await Self.time { try await SyncClient(node: node, outbox: root + "/outbox").sync(enrollment) }
            results.append(Result(phase: phase, samples: count, seconds: seconds, samplesPerSecond: Double(count) / seconds,
                                  bytesOnWire: report.bytesOnWire, uncompressedBytes: report.uncompressedBytes,
                                  compressionRatio: Double(report.uncompressedBytes) / Double(max(report.bytesOnWire, 1)),
                                  ackSeconds: report.ackSeconds.last ?? 0,
                                  buildSeconds: report.buildSeconds, checkSeconds: report.checkSeconds, sendSeconds: report.sendSeconds,
                                  nodePeakRssBytes: Measure.peakRSS(), serverPeakRssBytes: server.peakRSS)
                .cpu(node: Measure.cpuSeconds(pid: getpid()) - nodeCPU, server: server.cpuSeconds - serverCPU))
        }
        // The node loses its archive, keeps its keys and enrollment, and restores every bundle
        // from the server: `hp-node restore` in a process of its own, as a user runs it, so
        // its peak RSS is the restore's alone (not this process's, which holds the capture's).
        try enrollment.save(home.keyStore)
        try home.reset(newChain: false)
        let restoreServerCPU = server.cpuSeconds
        let restore = try BenchServer.measured(try BenchServer.sibling("hp-node"), ["--home", home.root, "--json", "restore"])
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        let restored = try decoder.decode(NodeRestore.Report.self, from: restore.output)
        guard restored.lastSequence == phases.count, restored.restored == phases.count else {
            throw ValidationError("hp-node restore restored \(restored.restored) of \(restored.lastSequence) bundles; \(phases.count) were synced")
        }
        results.append(Result(phase: "node_restore", samples: offset, seconds: restore.seconds, samplesPerSecond: Double(offset) / restore.seconds,
                              bytesOnWire: restored.bytesOnWire, uncompressedBytes: 0, compressionRatio: 0, ackSeconds: 0, buildSeconds: 0,
                              checkSeconds: 0, sendSeconds: 0, nodePeakRssBytes: restore.peakRSS, serverPeakRssBytes: server.peakRSS)
            .cpu(node: restore.cpuSeconds, server: server.cpuSeconds - restoreServerCPU))
        // With object storage: every bundle uploaded and a registry snapshot made, before the server stops.
        if let s3 { try await Self.waitForUploads(server.store, s3) }
        // The server stops; its data directory, as a backup directory, is rebuilt by
        // `hp-server restore --from DIR` (every kept bundle verified and applied again).
        server.stop()
        let rebuilt = try BenchServer.rebuild(from: root + "/server", to: root + "/rebuilt")
        results.append(Result(phase: "server_rebuild_from_directory", samples: offset, seconds: rebuilt.seconds, samplesPerSecond: Double(offset) / rebuilt.seconds,
                              bytesOnWire: 0, uncompressedBytes: 0, compressionRatio: 0, ackSeconds: 0, buildSeconds: 0, checkSeconds: 0, sendSeconds: 0,
                              nodePeakRssBytes: 0, serverPeakRssBytes: rebuilt.peakRSS).cpu(node: 0, server: rebuilt.cpuSeconds))
        if let s3 {
            // Rebuilt again, from the bucket: `hp-server restore --from s3://BUCKET/PREFIX --config FILE`.
            let rebuiltFromBucket = try BenchServer.rebuild(from: "s3://\(s3.bucket)/\(s3.prefix)", to: root + "/rebuilt-s3",
                                                           config: root + "/server/config.json")
            results.append(Result(phase: "server_rebuild_from_bucket", samples: offset, seconds: rebuiltFromBucket.seconds,
                                  samplesPerSecond: Double(offset) / rebuiltFromBucket.seconds, bytesOnWire: 0, uncompressedBytes: 0, compressionRatio: 0,
                                  ackSeconds: 0, buildSeconds: 0, checkSeconds: 0, sendSeconds: 0, nodePeakRssBytes: 0, serverPeakRssBytes: rebuiltFromBucket.peakRSS)
                .cpu(node: 0, server: rebuiltFromBucket.cpuSeconds))
        }
        // The first capture again, into a new home, after every other phase.
        results.append(try await capture("first_capture_again", home: ArchiveHome(root: root + "/node-again"), clock: ManualClock(1_750_000_000)))
        if bench.json { for r in results { try Output.jsonLine(r) }; return }
        let capture = results[0].samplesPerSecond, bracketed = (capture + results.last!.samplesPerSecond) / 2
        for r in results.dropFirst() where r.phase != "incremental_sync_1000_changes" && r.phase != "first_capture_again" {
            // The CPU floor bounds the ratio this machine allows however well the work overlaps.
            print(String(format: "%@ at %.2fx the first capture's rate, %.2fx the mean of both captures' (CPU: node %.1f s + server %.1f s; on %d cores at best %.1f s, %.2fx)",
                         r.phase, r.samplesPerSecond / capture, r.samplesPerSecond / bracketed, r.nodeCpuSeconds, r.serverCpuSeconds, Result.cores, r.cpuFloorSeconds,
                         r.cpuFloorSeconds > 0 ? results[0].seconds / r.cpuFloorSeconds * Double(r.samples) / Double(results[0].samples) : 0))
        }
        for r in results {
            print(String(format: "%@: %d samples in %.2f s = %.0f samples/s (node build %.2f s, part checks %.2f s of send %.2f s; server verify+apply after the end %.2f s); %.1f MB on the wire for %.1f MB of bundles (%.1fx); peak RSS node %.1f MB, server %.1f MB",
                         r.phase, r.samples, r.seconds, r.samplesPerSecond, r.buildSeconds, r.checkSeconds, r.sendSeconds, r.ackSeconds, Double(r.bytesOnWire) / 1_048_576, Double(r.uncompressedBytes) / 1_048_576,
                         r.compressionRatio, Double(r.nodePeakRssBytes) / 1_048_576, Double(r.serverPeakRssBytes) / 1_048_576))
        }
    }

    /// Waits (up to 10 minutes) until the server has uploaded every bundle and a registry snapshot.
    static func waitForUploads(_ store: ServerStore, _ s3: ObjectStoreSettings) async throws {
        let objects = ObjectStore(settings: s3)
        let deadline = Date().addingTimeInterval(600)
        while Date() < deadline {
            let counts = try store.registry().uploadCounts()
            if counts.pending == 0, counts.uploaded > 0, !(try await objects.list(prefix: objects.key("snapshots/"))).isEmpty { return }
            try await Task.sleep(for: .milliseconds(500))
        }
        throw ValidationError("the server had not uploaded every bundle and a snapshot to \(objects.location) within 10 minutes (see its log with HP_SQL_SLOW_MS set)")
    }

    /// The first capture of `samples` heart-rate samples into `home`, as phase `phase`: its time, CPU and peak RSS.
    func capture(_ phase: String, home: ArchiveHome, clock: ManualClock) async throws -> Result {
        Measure.resetPeakRSS()
        let cpu = Measure.cpuSeconds(pid: getpid())
        let (_, seconds) = try await Self.time { try bench.captureHeartRate(home: home, clock: clock, count: samples, offset: 0) }
        return Result(phase: phase, samples: samples, seconds: seconds, samplesPerSecond: Double(samples) / seconds,
                      bytesOnWire: 0, uncompressedBytes: 0, compressionRatio: 0, ackSeconds: 0, buildSeconds: 0, checkSeconds: 0,
                      sendSeconds: 0, nodePeakRssBytes: Measure.peakRSS(), serverPeakRssBytes: 0)
            .cpu(node: Measure.cpuSeconds(pid: getpid()) - cpu, server: 0)
    }

    static func time<T>(_ body: () async throws -> T) async rethrows -> (T, Double) {
        let start = DispatchTime.now().uptimeNanoseconds
        let r = try await body()
        return (r, Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9)
    }
}

extension SyncBench.Result {
    /// Cores this machine has (the CPU floor's divisor).
    static let cores = max(ProcessInfo.processInfo.activeProcessorCount, 1)

    /// This result with the CPU its node and server used, and the wall-time floor that CPU sets.
    func cpu(node: Double, server: Double) -> Self {
        var r = self
        r.nodeCpuSeconds = node
        r.serverCpuSeconds = server
        r.cpuFloorSeconds = (node + server) / Double(Self.cores)
        return r
    }
}
