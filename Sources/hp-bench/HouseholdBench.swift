import ArgumentParser
import Foundation
import GRDB
import HealthProbeArchive
import HealthProbeCLI
import HealthProbeSync

/// `hp-bench household --nodes N`: the release `hp-server` binary serving on
/// 127.0.0.1 (TLS), N simulated nodes in this process enrolled over the
/// protocol, all syncing at once: a first observation each, then an
/// incremental one of `--samples` new samples each. Checks every bundle was
/// accepted exactly once and every replica matches its node's digest; reports
/// acknowledgement latency percentiles and the server's peak RSS.
struct HouseholdBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "household", abstract: "N nodes syncing to one hp-server at once over TLS on loopback.")

    @Option(name: .long, help: "Simulated nodes.") var nodes: Int = 50
    @Option(name: .long, help: "Samples per observation.") var samples: Int = 1000
    @Option(name: .long, help: "Observations per node (each synced by all nodes at once).") var rounds: Int = 2
    @OptionGroup var bench: BenchOptions

    struct Result: Codable {
        var phase: String
        var nodes: Int
        var bundles: Int
        var seconds: Double
        var ackP50Seconds: Double
        var ackP99Seconds: Double
        var ackMaxSeconds: Double
        var serverPeakRssBytes: Int64
        var exactlyOnce: Bool
        var digestsMatch: Bool
    }

    func validate() throws {
        guard (1...500).contains(nodes) else { throw ValidationError("--nodes must be 1...500") }
        guard (1...1_000_000).contains(samples), (1...20).contains(rounds) else { throw ValidationError("--samples 1...1000000, --rounds 1...20") }
    }

    func run() async throws {
        let root = bench.workDirectory("household")
        defer { bench.cleanUp(root) }
        let serverBinary = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent().appendingPathComponent("hp-server").path
        guard FileManager.default.isExecutableFile(atPath: serverBinary) else {
            throw ValidationError("\(serverBinary) is missing: build it first (swift build -c release --product hp-server)")
        }
        let data = root + "/server"
        try run(serverBinary, ["init", "--data", data])
        let server = Process()
        server.executableURL = URL(fileURLWithPath: serverBinary)
        server.arguments = ["serve", "--data", data, "--listen", "127.0.0.1:0"]
        let out = Pipe()
        server.standardOutput = out
        server.standardError = FileHandle.nullDevice
        try server.run()
        defer { if server.isRunning { server.terminate(); server.waitUntilExit() } }
        guard let port = Self.readPort(out) else { throw ValidationError("hp-server did not report its port") }
        let store = ServerStore(root: data)
        let fingerprint = try store.identity().fingerprint

        // Nodes: homes, enrollment over the protocol.
        var enrollments: [NodeEnrollment] = []
        var homes: [ArchiveHome] = []
        let clock = ManualClock(1_750_000_000)
        for i in 0..<nodes {
            let home = ArchiveHome(root: root + "/node\(i)")
            homes.append(home)
            let secret = try store.registry().issueToken(name: "node\(i)", now: Date().timeIntervalSince1970)
            let token = EnrollmentToken(address: "127.0.0.1:\(port)", fingerprint: fingerprint, name: "node\(i)", secret: secret)
            enrollments.append(try await SyncClient.enroll(token: token, clientTime: Date().timeIntervalSince1970))
        }
        var results: [Result] = []
        for round in 0..<rounds {
            for (i, home) in homes.enumerated() { try capture(home: home, clock: clock, count: samples, offset: round * samples + i * 10_000_000) }
            clock.advance(3600)
            let start = DispatchTime.now().uptimeNanoseconds
            let reports = try await withThrowingTaskGroup(of: SyncClient.Report.self) { group in
                for (i, home) in homes.enumerated() {
                    let e = enrollments[i], root = home.root
                    group.addTask {
                        let node = try home.open(clock: clock)
                        return try await SyncClient(node: node, outbox: root + "/outbox").sync(e)
                    }
                }
                var all: [SyncClient.Report] = []
                for try await r in group { all.append(r) }
                return all
            }
            let seconds = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
            let acks = reports.flatMap(\.ackSeconds).sorted()
            func pct(_ p: Double) -> Double { acks.isEmpty ? 0 : acks[min(acks.count - 1, Int((Double(acks.count) * p).rounded(.up)) - 1)] }
            // Exactly once: each node's chain holds round+1 bundles, sequences 1...round+1, nothing re-applied.
            var once = reports.allSatisfy { $0.sent == 1 && $0.alreadyApplied == 0 }
            var digests = true
            for home in homes {
                let node = try home.open(mode: .readOnly, clock: clock)
                let replica = try Archive.open(path: store.replicaPath(node.deviceChainHash), mode: .readOnly)
                let (logged, replicaObs) = try await replica.writer.read { db in
                    (try Int.fetchOne(db, sql: "SELECT count(*) FROM bundle_log WHERE direction = 'received'")!,
                     try Int64.fetchOne(db, sql: "SELECT max(id) FROM observations")!)
                }
                if logged != round + 1 { once = false }
                let nodeObs = try await node.archive.writer.read { db in try Int64.fetchOne(db, sql: "SELECT max(id) FROM observations")! }
                let a = try await node.archive.writer.read { db in try ChainStateDigest.compute(db, observationID: nodeObs) }
                let b = try await replica.writer.read { db in try ChainStateDigest.compute(db, observationID: replicaObs) }
                if a != b { digests = false }
            }
            results.append(Result(phase: round == 0 ? "first_sync" : "incremental_sync_\(round)", nodes: nodes, bundles: acks.count, seconds: seconds,
                                  ackP50Seconds: pct(0.5), ackP99Seconds: pct(0.99), ackMaxSeconds: acks.last ?? 0,
                                  serverPeakRssBytes: Self.peakRSS(pid: server.processIdentifier), exactlyOnce: once, digestsMatch: digests))
        }
        if bench.json { for r in results { try Output.jsonLine(r) }; return }
        for r in results {
            print(String(format: "%@: %d nodes, %d bundles of %d samples in %.2f s; ack p50 %.3f s, p99 %.3f s, max %.3f s; server peak RSS %.1f MB; exactly once: %@; digests match: %@",
                         r.phase, r.nodes, r.bundles, samples, r.seconds, r.ackP50Seconds, r.ackP99Seconds, r.ackMaxSeconds,
                         Double(r.serverPeakRssBytes) / 1_048_576, r.exactlyOnce ? "yes" : "NO", r.digestsMatch ? "yes" : "NO"))
        }
        if results.contains(where: { !$0.exactlyOnce || !$0.digestsMatch }) { throw ExitCode(1) }
    }

    func run(_ exe: String, _ args: [String]) throws {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: exe)
        p.arguments = args
        p.standardOutput = FileHandle.nullDevice
        try p.run()
        p.waitUntilExit()
        guard p.terminationStatus == 0 else { throw ValidationError("\(exe) \(args.joined(separator: " ")) failed") }
    }

    static func readPort(_ pipe: Pipe) -> Int? {
        var text = ""
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline {
            let d = pipe.fileHandleForReading.availableData
            if d.isEmpty { break }
            text += String(decoding: d, as: UTF8.self)
            if let line = text.split(separator: "\n").first(where: { $0.hasPrefix("listening on ") }), let colon = line.lastIndex(of: ":") {
                return Int(line[line.index(after: colon)...])
            }
        }
        return nil
    }

    /// VmHWM of another process, bytes.
    static func peakRSS(pid: Int32) -> Int64 {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return 0 }
        for line in text.split(separator: "\n") where line.hasPrefix("VmHWM:") {
            return (line.split(separator: " ").compactMap { Int64($0) }.first ?? 0) * 1024
        }
        return 0
    }

    /// One anchored observation of `count` heart-rate samples (indices from `offset`).
    func capture(home: ArchiveHome, clock: ManualClock, count: Int, offset: Int) throws {
        let node = try home.open(clock: clock)
        let session = try CaptureSession.begin(node, context: ObservationContext(triggerReason: "benchmark"))
        let run = try session.beginTypeRun(CaptureBench.types[0], kind: .anchored)
        let pipeline = PipelinedPageWriter(run: run)
        var page: [CapturedSample] = []
        for i in offset..<(offset + count) {
            page.append(CaptureBench.sample(type: 0, index: i, generation: 0)!)
            if page.count == bench.pageSize { try pipeline.submit(page, to: run); page = [] }
        }
        if !page.isEmpty { try pipeline.submit(page, to: run) }
        try pipeline.flush()
        _ = try run.complete()
        try session.finish()
    }
}
