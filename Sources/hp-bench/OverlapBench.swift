import ArgumentParser
import Foundation
import HealthProbeArchive
import HealthProbeCLI
import HealthProbeNode
import HealthProbeProtocol
import HealthProbeServer

/// `hp-bench overlaps`: the household's shared-records count (`HouseholdSummary.overlaps`,
/// what the all-chains type page shows) over `--chains` replicas of `--samples` heart-rate
/// records each, `--shared` percent of them the same in every chain (100: every record held
/// by every chain, the most pairs; 0: no record shared, the most distinct records), against
/// one SQL join per pair of chains (`HouseholdSummary.identical`), both in this run. The
/// merge is timed over the first 2, 4, ... chains, so its growth with the chains shows.
struct OverlapBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "overlaps", abstract: "Measure the household's shared-records count against a join per pair of chains.")

    @Option(name: .long, help: "Chains in the household.") var chains: Int = 12
    @Option(name: .long, help: "Samples per chain.") var samples: Int = 100_000
    @Option(name: .long, help: "Percent of each chain's records that every chain holds (0...100).") var shared: Int = 100
    @OptionGroup var bench: BenchOptions

    struct Step: Codable {
        var chains: Int
        var mergeSeconds: Double
        /// Merge seconds per million records read (chains x samples).
        var mergeSecondsPerMillionRecords: Double
    }

    struct Result: Codable {
        var chains: Int
        var samplesPerChain: Int
        var sharedPercent: Int
        var steps: [Step]
        var pairwiseSeconds: Double
        /// Merge over every chain / one join per pair, same run.
        var mergeToPairwise: Double
        var answersEqual: Bool
    }

    func validate() throws {
        guard (2...64).contains(chains), (1...10_000_000).contains(samples), (0...100).contains(shared) else {
            throw ValidationError("--chains 2...64, --samples 1...10000000, --shared 0...100")
        }
    }

    func run() async throws {
        let root = bench.workDirectory("overlaps")
        defer { bench.cleanUp(root) }
        let server = try BenchServer.start(data: root + "/server")
        defer { server.stop() }
        var hashes: [String] = []
        for i in 0..<chains {
            let home = ArchiveHome(root: root + "/node\(i)")
            let clock = ManualClock(1_750_000_000)
            // Records 0..<common are every chain's; the rest of chain i's start past every other chain's.
            let common = samples * shared / 100
            try bench.captureHeartRate(home: home, clock: clock, count: common, offset: 0)
            if samples > common {
                clock.advance(60)
                try bench.captureHeartRate(home: home, clock: clock, count: samples - common, offset: common + i * (samples - common))
            }
            let enrollment = try await server.enroll("phone\(i)")
            let node = try home.open(clock: clock)
            _ = try await SyncClient(node: node, outbox: root + "/outbox\(i)").sync(enrollment)
            hashes.append(node.deviceChainHash)
            FileHandle.standardError.write(Data("synced chain \(i + 1) of \(chains)\n".utf8))
        }
        let type = "HKQuantityTypeIdentifierHeartRate"
        var steps: [Step] = []
        var merged: [HouseholdSummary.SharedSources] = []
        var k = 2
        while true {
            let started = Date()
            merged = try HouseholdSummary.overlaps(server.store, chains: Array(hashes.prefix(k)), type: type)
            let seconds = Date().timeIntervalSince(started)
            steps.append(Step(chains: k, mergeSeconds: seconds, mergeSecondsPerMillionRecords: seconds / (Double(k * samples) / 1e6)))
            if k == chains { break }
            k = min(chains, k * 2)
        }
        let started = Date()
        var pairwise: [HouseholdSummary.SharedSources] = []
        for i in hashes.indices { for j in hashes.indices where j > i { pairwise += try HouseholdSummary.identical(server.store, hashes[i], hashes[j], type: type) } }
        let pairwiseSeconds = Date().timeIntervalSince(started)
        let result = Result(chains: chains, samplesPerChain: samples, sharedPercent: shared, steps: steps, pairwiseSeconds: pairwiseSeconds,
                            mergeToPairwise: steps.last!.mergeSeconds / pairwiseSeconds, answersEqual: merged == pairwise)
        if bench.json { try Output.json(result); return }
        print("\(chains) chains x \(samples) records, \(shared)% of them in every chain:")
        for s in steps { print(String(format: "  merge over %2d chains  %8.2f s  (%.2f s per million records)", s.chains, s.mergeSeconds, s.mergeSecondsPerMillionRecords)) }
        print(String(format: "  join per pair (%d pairs) %7.2f s; merge / pairs %.2f; answers equal: %@", chains * (chains - 1) / 2, pairwiseSeconds, result.mergeToPairwise, result.answersEqual ? "yes" : "NO"))
    }
}
