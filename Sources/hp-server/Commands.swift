import ArgumentParser
import Foundation
import GRDB
import HealthProbeArchive
import HealthProbeCanonical
import HealthProbeCLI
import HealthProbeServer
import HealthProbeProtocol

struct Apply: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Verify a bundle file and apply it to its chain's replica.",
        discussion: "Verification and application run in one transaction: a bundle that fails any check stores nothing. The same bundle again is acknowledged as already applied; a different bundle at a taken sequence is refused as divergence.")
    @OptionGroup var options: DataOptions

    @Argument(help: "Bundle file in line form (hp-node bundle).")
    var file: String

    @Option(name: .long, help: "The manifest hash the bundle was issued with.")
    var manifestHash: String

    func run() async throws {
        let store = options.store
        try store.requireInitialized()
        let (chain, outcome) = try store.apply(file: file, manifestHash: manifestHash, now: Date().timeIntervalSince1970)
        switch outcome {
        case .applied(let obs, let seq): print("applied: chain \(chain.prefix(16)), sequence \(seq), replica observation \(obs)")
        case .alreadyApplied(let seq): print("already applied: chain \(chain.prefix(16)), sequence \(seq); nothing changed")
        }
    }
}

struct Chains: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "List the device chains and what was received of each.")
    @OptionGroup var options: DataOptions

    struct Row: Codable { var chain: String; var device: String?; var sequences: Int; var lastManifestHash: String?; var lastReceivedAt: Double? }

    func run() async throws {
        var rows: [Row] = []
        let registry = try options.store.registry()
        for chain in try options.store.chains() {
            let device = try registry.chainInfo(chain).device
            let replica = try Archive.open(path: options.store.replicaPath(chain), mode: .readOnly)
            let r = try await replica.receivedBundles()
            rows.append(Row(chain: chain, device: device, sequences: r.count, lastManifestHash: r.lastManifestHash, lastReceivedAt: r.lastRecordedAt))
        }
        if options.json { try Output.json(rows); return }
        var t = TextTable(["chain", "device", "bundles", "last manifest", "last received (UTC)"], rightAligned: [2])
        for r in rows { t.add([String(r.chain.prefix(16)), r.device ?? "-", String(r.sequences), r.lastManifestHash.map { String($0.prefix(16)) } ?? "-", Output.date(r.lastReceivedAt)]) }
        print(t.render())
    }
}

struct Digest: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print a chain's state digest at a sequence (equal to `hp-node digest` at the same observation).")
    @OptionGroup var options: DataOptions

    @Option(name: .long, help: "Chain hash or a unique prefix of it.")
    var chain: String

    @Option(name: .long, help: "Sequence number (default: the latest received).")
    var at: Int?

    func run() async throws {
        let store = options.store
        let chainHash = try store.chain(matching: chain)
        let replica = try Archive.open(path: store.replicaPath(chainHash), mode: .readOnly)
        let at = self.at
        let (seq, state) = try await replica.receivedChainState(at: at)
        guard let r = state else {
            throw ArchiveError(.notFound, "chain \(chainHash.prefix(16)) has no bundle at sequence \(seq)")
        }
        if options.json {
            try Output.json(["sequence": .int(seq), "digest": .string(r.digest), "visible_count": .int(r.visibleCount)] as [String: JSONValue])
            return
        }
        print("chain \(chainHash.prefix(16)) sequence \(seq): \(r.digest) (\(r.visibleCount) visible)")
    }
}

