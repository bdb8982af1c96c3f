import ArgumentParser
import Foundation
#if canImport(Glibc)
import Glibc
#endif
import GRDB
import HealthProbeArchive
import HealthProbeCLI
import HealthProbeNode
import HealthProbeServer
import HealthProbeProtocol
import NIOCore

/// `hp-bench apply`: the server's verify-and-apply of received bundles, in this
/// process and one bundle at a time, without TLS or the nodes' work: the CPU a
/// bundle costs the server, steadier than the household bench's latencies.
/// The bundles are built first (not measured); each is then applied as
/// `hp-server` does: the same store, kept replicas, and a checkpoint after each.
struct ApplyBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "apply", abstract: "The server's verify-and-apply of bundles, in process: CPU per bundle.")

    @Option(name: .long, help: "Device chains (one node each).") var chains: Int = 20
    @Option(name: .long, help: "Samples per observation.") var samples: Int = 1000
    @Option(name: .long, help: "Observations per chain (round 1 creates the replicas).") var rounds: Int = 3
    @Option(name: .long, help: "Replicas kept open between bundles (as hp-server's cache).") var keptReplicas: Int = ServerConfig.defaultKeptReplicas
    @Flag(name: .long, help: "Apply bundle files of lines, not the gzip members hp-server keeps of what it received.") var lines = false
    @OptionGroup var bench: BenchOptions

    struct Result: Codable {
        var phase: String
        var bundles: Int
        var seconds: Double
        /// Process CPU (user + system, every thread) per bundle.
        var cpuMillisecondsPerBundle: Double
        var wallMillisecondsPerBundle: Double
        var digestsMatch: Bool
    }

    func validate() throws {
        guard (1...500).contains(chains), (1...1_000_000).contains(samples), (1...50).contains(rounds), ServerConfig.keptReplicasRange.contains(keptReplicas) else {
            throw ValidationError("--chains 1...500, --samples 1...1000000, --rounds 1...50, --kept-replicas \(ServerConfig.keptReplicasRange)")
        }
    }

    func run() async throws {
        let root = bench.workDirectory("apply")
        defer { bench.cleanUp(root) }
        let store = ServerStore(root: root + "/server")
        try store.create()
        let clock = ManualClock(1_750_000_000)
        let homes = (0..<chains).map { ArchiveHome(root: root + "/node\($0)") }
        var previous = [String?](repeating: nil, count: chains)
        let cache = ReplicaCache(capacity: keptReplicas)
        var results: [Result] = []
        try FileManager.default.createDirectory(atPath: root + "/bundles", withIntermediateDirectories: true)
        for round in 0..<rounds {
            // Not measured: capture and build each chain's bundle of this round.
            var files: [(chain: String, path: String, hash: String)] = []
            for (i, home) in homes.enumerated() {
                try bench.captureHeartRate(home: home, clock: clock, count: samples, offset: round * samples + i * 1_000_000)
                let node = try home.open(clock: clock)
                let path = root + "/bundles/\(i)-\(round + 1).jsonl"
                let link = previous[i]
                let written = try await node.archive.unsafeBenchmarkAccess.read { db in
                    let obs = try Int64.fetchOne(db, sql: "SELECT max(id) FROM observations")!
                    return try BundleFile.write(db, observationID: obs, previousManifestHash: link, to: path)
                }
                previous[i] = written.manifestHash
                files.append((node.deviceChainHash, lines ? path : try Self.asReceived(path), written.manifestHash))
            }
            clock.advance(3600)
            let cpuBefore = Measure.cpuSeconds(pid: getpid())
            let start = DispatchTime.now().uptimeNanoseconds
            for f in files {
                let outcome = try store.apply(file: f.path, manifestHash: f.hash, now: clock.now()) { chain in
                    try cache.replica(chain) { try store.openReplica(chain) }
                }.outcome
                guard case .applied = outcome else { throw ValidationError("bundle of \(f.chain.prefix(12)) was not applied: \(outcome)") }
                try cache.checkpoint(f.chain)
                cache.releaseMemory(f.chain)
            }
            let seconds = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
            let cpu = Measure.cpuSeconds(pid: getpid()) - cpuBefore
            var digests = true
            for home in homes {
                if try await !store.replicaMatches(home, clock: clock) { digests = false }
            }
            results.append(Result(phase: round == 0 ? "first_bundle" : "bundle_\(round + 1)", bundles: files.count, seconds: seconds,
                                  cpuMillisecondsPerBundle: cpu * 1000 / Double(files.count), wallMillisecondsPerBundle: seconds * 1000 / Double(files.count),
                                  digestsMatch: digests))
        }
        if bench.json { for r in results { try Output.jsonLine(r) }; return }
        for r in results {
            print(String(format: "%@: %d bundles of %d samples in %.2f s; CPU %.1f ms per bundle, wall %.1f ms; digests match: %@",
                         r.phase, r.bundles, samples, r.seconds, r.cpuMillisecondsPerBundle, r.wallMillisecondsPerBundle, r.digestsMatch ? "yes" : "NO"))
        }
        if results.contains(where: { !$0.digestsMatch }) { throw ExitCode(1) }
    }

    /// The bundle at `path` as hp-server keeps what it received (`GzipParts`): parts of
    /// whole lines of at most 8 MiB, deflated as a node does, each given as a
    /// `BUNDLE_PART` frame to the server's own `QuarantineFile`. Returns the new file.
    static func asReceived(_ path: String) throws -> String {
        let quarantine = try QuarantineFile(directory: (path as NSString).deletingLastPathComponent)
        let compressor = BundlePartCodec.Compressor()
        var part: [UInt8] = [], zlib: [UInt8] = [], index: UInt32 = 0
        func flush() throws {
            guard !part.isEmpty else { return }
            let n = try part.withUnsafeBytes { try compressor.compress($0, into: &zlib) }
            var payload = ByteBuffer()
            payload.reserveCapacity(8 + n)
            payload.writeInteger(index, endianness: .big)
            payload.writeInteger(UInt32(part.count), endianness: .big)
            payload.writeBytes(zlib[0..<n])
            _ = try quarantine.write(BundlePart(SyncFrame(kind: .bundlePart, payload: payload)))
            index += 1
            part.removeAll(keepingCapacity: true)
        }
        for line in try FileLines(path: path) {
            if part.count + line.count + 1 > BundlePartCodec.maxPartSize { try flush() }
            part += line
            part.append(0x0A)
        }
        try flush()
        quarantine.finish()
        let out = path + ".gz"
        try FileManager.default.moveItem(atPath: quarantine.path, toPath: out)
        try FileManager.default.removeItem(atPath: path)
        return out
    }
}
