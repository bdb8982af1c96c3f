import ArgumentParser
import Foundation
import GRDB
import HealthProbeArchive
import HealthProbeCLI
import HealthProbeServer
import HealthProbeProtocol

struct Bundles: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "List the bundles received for a chain.")
    @OptionGroup var options: DataOptions
    @Option(name: .long, help: "Chain hash or a unique prefix of it.") var chain: String

    struct Entry: Codable { var sequence: Int; var observationId: Int64; var manifestHash: String; var previousManifestHash: String?; var items: Int; var receivedAt: Double; var stored: Bool }

    func run() async throws {
        let store = options.store
        let hash = try store.chain(matching: chain)
        let replica = try Archive.open(path: store.replicaPath(hash), mode: .readOnly)
        let rows = try await replica.receivedBundleLog().map { r in
            Entry(sequence: r.sequence, observationId: r.observationID, manifestHash: r.manifestHash, previousManifestHash: r.previousManifestHash,
                  items: r.itemCount, receivedAt: r.recordedAt, stored: store.storedBundlePath(hash, sequence: r.sequence) != nil)
        }
        if options.json { try Output.json(rows); return }
        print("chain \(hash)")
        var t = TextTable(["sequence", "replica obs", "items", "manifest", "previous", "received (UTC)", "stored"], rightAligned: [0, 1, 2])
        for e in rows {
            t.add([String(e.sequence), String(e.observationId), String(e.items), String(e.manifestHash.prefix(16)),
                   e.previousManifestHash.map { String($0.prefix(16)) } ?? "-", Output.date(e.receivedAt), e.stored ? "yes" : "MISSING"])
        }
        print(t.render())
    }
}

struct ServerVerify: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract: "Re-verify what was received: bundle links, every stored bundle's hashes, each replica's integrity (exit 1 on any problem).")
    @OptionGroup var options: DataOptions
    @Option(name: .long, help: "Only this chain (hash or unique prefix).") var chain: String?
    @Flag(name: .long, help: "Links, the latest stored bundle and quick replica checks (default).") var quick = false
    @Flag(name: .long, help: "Every stored bundle and every replica check.") var full = false
    @Option(name: .long, help: "Only stored bundles of part n of t (sequence mod t), e.g. 1/4.") var subset: String?

    func validate() throws {
        if quick && full { throw ValidationError("choose --quick or --full, not both") }
        if let subset {
            let p = subset.split(separator: "/").compactMap { Int($0) }
            guard p.count == 2, p[1] >= 1, (1...p[1]).contains(p[0]) else { throw ValidationError("--subset \(subset): expected n/t with 1 <= n <= t") }
        }
    }

    func run() async throws {
        let store = options.store
        try store.requireInitialized()
        let parts = subset?.split(separator: "/").compactMap { Int($0) }
        let reports = try ServerVerifier.run(store, chain: chain, mode: full ? .full : .quick, subset: parts.map { ($0[0], $0[1]) })
        try store.registry().recordAudit(.cli, .verify, target: chain,
                                         detail: "\(full ? "full" : "quick"): \(reports.count) chain(s), \(reports.filter { !$0.ok }.count) with problems")
        if options.json { try Output.json(reports) } else {
            for r in reports {
                print("chain \(r.chain.prefix(16)) (\(r.bundles) bundles): \(r.ok ? "ok" : "PROBLEMS")")
                var t = TextTable(["check", "status", "detail"])
                for c in r.checks { t.add([c.name, c.status.rawValue, c.detail]) }
                print(t.render())
            }
            if reports.isEmpty { print("no chains") }
        }
        if reports.contains(where: { !$0.ok }) { throw ExitCode(1) }
    }
}

struct HouseholdCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "summary",
        abstract: "Every chain side by side: visible counts per type, daily aggregates, household sums of chains, possibly shared sources.")
    @OptionGroup var options: DataOptions
    @Option(name: .long, help: "One sample type (shows its daily aggregates).") var type: String?
    @Option(name: .long, help: "Daily rows from this UTC date.") var from: String?
    @Option(name: .long, help: "Daily rows before this UTC date.") var to: String?

    static func date(_ s: String?, _ option: String) throws -> Double? {
        try s.map { try CLIDate.parse($0, option: option) }
    }

    func validate() throws { _ = try Self.date(from, "--from"); _ = try Self.date(to, "--to") }

    func run() async throws {
        let store = options.store
        try store.requireInitialized()
        let report = try HouseholdSummary.build(store, registry: try store.registry(), type: type, from: try Self.date(from, "--from"), to: try Self.date(to, "--to"))
        if options.json { try Output.json(report); return }
        HouseholdTable.print(report, type: type)
    }
}
