import ArgumentParser
import Foundation
import GRDB
import HealthProbeArchive
import HealthProbeCanonical
import HealthProbeCLI

struct Digest: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print the chain-state digest at an observation.",
        discussion: "A SHA-256 over the canonical items visible at the observation (Protocol/bundles.md); a replica of this chain gives the same digest for the same observation.")

    @OptionGroup var options: HomeOptions

    @Option(name: .long, help: "Observation id (default: the latest).")
    var at: Int64?

    func run() async throws {
        let node = try options.open(.readOnly)
        let at = self.at
        guard let found = try await node.archive.chainState(chain: node.deviceChainID, at: at) else {
            throw ArchiveError(.notFound, "the archive has no observations yet")
        }
        let (obs, r) = found
        if options.json {
            try Output.json(["observation_id": .number(Double(obs)), "digest": .string(r.digest), "visible_count": .int(r.visibleCount)] as [String: JSONValue])
            return
        }
        print("observation \(obs): \(r.digest) (\(r.visibleCount) visible)")
    }
}

struct Bundle: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Write an observation's bundle in line form (Protocol/bundles.md) and print its manifest hash.",
        discussion: "Bundles chain: each names the previous bundle's manifest hash, so the earlier observations of the chain are bundled too (streamed, not kept) to compute it.")

    @OptionGroup var options: HomeOptions

    @Option(name: .long, help: "Observation id.")
    var at: Int64

    @Option(name: .long, help: "Output file.")
    var out: String

    func run() async throws {
        let node = try options.open(.readOnly)
        let chain = node.deviceChainID
        let at = self.at, path = out
        let written = try await node.archive.writeBundle(chain: chain, observation: at, to: path)
        let (header, trailer, hash) = (written.header, written.trailer, written.manifestHash)
        if options.json {
            try Output.json(["manifest_hash": .string(hash), "sequence": .int(header.sequence), "item_count": .int(trailer.itemCount), "file": .string(path)] as [String: JSONValue])
            return
        }
        print("wrote \(path): observation \(at), sequence \(header.sequence), \(trailer.itemCount) items")
        print("manifest hash \(hash)")
    }
}

struct VerifyBundle: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify-bundle",
        abstract: "Verify a bundle file from its bytes alone (Protocol/bundles.md section 5).",
        discussion: "Exits 0 and prints the manifest hash when the bundle is valid (and matches --manifest-hash if given); otherwise exits 1 naming the check and line that failed.")

    @Argument(help: "Bundle file in line form.")
    var file: String

    @Option(name: .long, help: "The manifest hash the bundle was issued with.")
    var manifestHash: String?

    func run() async throws {
        let (header, verifier) = try BundleFile.verify(file, expected: manifestHash)
        print("valid: chain \(header.deviceChainHash.prefix(16)), sequence \(header.sequence), \(verifier.itemCount) items")
        print("manifest hash \(verifier.manifestHash ?? "")")
    }
}
