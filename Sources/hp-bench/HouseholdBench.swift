import ArgumentParser
import Foundation
import GRDB
import HealthProbeArchive
import HealthProbeCLI
import HealthProbeNode
import HealthProbeServer
import HealthProbeProtocol

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
        /// The server's CPU time (user + system) during the phase.
        var serverCpuSeconds: Double
        /// This process's CPU time during the phase: the nodes' side (open, build, deflate, TLS, send).
        var nodesCpuSeconds: Double
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
        let server = try BenchServer.start(data: root + "/server")
        defer { server.stop() }
        let store = server.store

        // Nodes: homes, enrollment over the protocol.
        var enrollments: [NodeEnrollment] = []
        var homes: [ArchiveHome] = []
        let clock = ManualClock(1_750_000_000)
        for i in 0..<nodes {
            let home = ArchiveHome(root: root + "/node\(i)")
            homes.append(home)
            enrollments.append(try await server.enroll("node\(i)"))
        }
        var results: [Result] = []
        for round in 0..<rounds {
            for (i, home) in homes.enumerated() { try bench.captureHeartRate(home: home, clock: clock, count: samples, offset: round * samples + i * 10_000_000) }
            clock.advance(3600)
            let start = DispatchTime.now().uptimeNanoseconds
            let cpuBefore = server.cpuSeconds, nodesBefore = Measure.cpuSeconds(pid: getpid())
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
            let serverCPU = server.cpuSeconds - cpuBefore, nodesCPU = Measure.cpuSeconds(pid: getpid()) - nodesBefore
            let acks = reports.flatMap(\.ackSeconds).sorted()
            func pct(_ p: Double) -> Double { acks.isEmpty ? 0 : acks[min(acks.count - 1, Int((Double(acks.count) * p).rounded(.up)) - 1)] }
            // Exactly once: each node's chain holds round+1 bundles, sequences 1...round+1, nothing re-applied.
            var once = reports.allSatisfy { $0.sent == 1 && $0.alreadyApplied == 0 }
            var digests = true
            for home in homes {
                let node = try home.open(mode: .readOnly, clock: clock)
                let replica = try Archive.open(path: store.replicaPath(node.deviceChainHash), mode: .readOnly)
                let logged = try await replica.unsafeBenchmarkAccess.read { db in
                    try Int.fetchOne(db, sql: "SELECT count(*) FROM bundle_log WHERE direction = 'received'")!
                }
                if logged != round + 1 { once = false }
                if try await !ServerStore.digestsMatch(node, replica) { digests = false }
            }
            results.append(Result(phase: round == 0 ? "first_sync" : "incremental_sync_\(round)", nodes: nodes, bundles: acks.count, seconds: seconds,
                                  ackP50Seconds: pct(0.5), ackP99Seconds: pct(0.99), ackMaxSeconds: acks.last ?? 0,
                                  serverPeakRssBytes: server.peakRSS, serverCpuSeconds: serverCPU, nodesCpuSeconds: nodesCPU, exactlyOnce: once, digestsMatch: digests))
        }
        if bench.json { for r in results { try Output.jsonLine(r) }; return }
        for r in results {
            print(String(format: "%@: %d nodes, %d bundles of %d samples in %.2f s; ack p50 %.3f s, p99 %.3f s, max %.3f s; server peak RSS %.1f MB, CPU %.2f s (nodes %.2f s); exactly once: %@; digests match: %@",
                         r.phase, r.nodes, r.bundles, samples, r.seconds, r.ackP50Seconds, r.ackP99Seconds, r.ackMaxSeconds,
                         Double(r.serverPeakRssBytes) / 1_048_576, r.serverCpuSeconds, r.nodesCpuSeconds, r.exactlyOnce ? "yes" : "NO", r.digestsMatch ? "yes" : "NO"))
        }
        if results.contains(where: { !$0.exactlyOnce || !$0.digestsMatch }) { throw ExitCode(1) }
    }
}
