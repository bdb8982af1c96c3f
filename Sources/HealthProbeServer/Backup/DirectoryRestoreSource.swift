import Foundation
import HealthProbeArchive

/// A backup directory (`hp-server backup`, or a copy of a stopped server's data directory).
public struct DirectoryRestoreSource: RestoreSource {
    let store: ServerStore
    public var location: String { store.root }

    public init(path: String) { store = ServerStore(root: path) }

    public func fetchRegistryAndIdentity(registry: String, tls: String) async throws {
        try store.requireInitialized()
        guard FileManager.default.fileExists(atPath: store.registryPath) else {
            throw ArchiveError(.notFound, "\(store.registryPath) is missing: \(store.root) holds no registry to restore from")
        }
        // A copy by SQLite's backup: a registry left with a WAL (a copied stopped server) is read whole.
        try DeviceRegistry.snapshot(ofFile: store.registryPath, to: registry)
        for name in try FileManager.default.contentsOfDirectory(atPath: store.tlsDirectory) where !name.hasPrefix(".") {
            try PrivateFiles.copySynced(store.tlsDirectory + "/" + name, to: tls + "/" + name)
        }
    }

    public func bundles() async throws -> [String: [RestoreSourceBundle]] {
        var result: [String: [RestoreSourceBundle]] = [:]
        let fm = FileManager.default
        for chain in (try? fm.contentsOfDirectory(atPath: store.chainsDirectory)) ?? [] where ChainName.isValid(chain) {
            let dir = store.bundlesDirectory(chain)
            var list: [RestoreSourceBundle] = []
            for name in (try? fm.contentsOfDirectory(atPath: dir)) ?? [] {
                guard let (sequence, gzip) = ChainName.bundleFile(name) else { continue }
                list.append(RestoreSourceBundle(sequence: sequence, reference: dir + "/" + name, sha256: nil, gzip: gzip))
            }
            result[chain] = list.sorted { $0.sequence < $1.sequence }
        }
        return result
    }

    public func fetch(_ bundle: RestoreSourceBundle, to path: String) async throws {
        try PrivateFiles.copySynced(bundle.reference, to: path)
    }

    public func expectedDigests() async throws -> [String: String] {
        let path = store.root + "/" + ServerBackup.manifestName
        guard let data = FileManager.default.contents(atPath: path) else { return [:] }
        struct Manifest: Decodable { var chains: [ServerBackup.Chain] }
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        guard let manifest = try? decoder.decode(Manifest.self, from: data) else {
            throw ArchiveError(.invalidInput, "\(path) is not a backup description hp-server wrote; remove it to restore without the digest comparison")
        }
        var digests: [String: String] = [:]
        for c in manifest.chains { if let d = c.digest { digests[c.chain] = d } }
        return digests
    }
}

/// Names in a data directory: chain directories and kept bundle files.
enum ChainName {
    /// 64 lower-case hex digits.
    static func isValid(_ name: String) -> Bool {
        name.utf8.count == 64 && name.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
    }

    /// `<8 digits>.jsonl` or `<8 digits>.jsonl.gz`: the sequence and whether it is gzip.
    static func bundleFile(_ name: String) -> (Int, Bool)? {
        let gzip = name.hasSuffix(".jsonl.gz")
        guard gzip || name.hasSuffix(".jsonl") else { return nil }
        let digits = name.prefix(while: { $0.isASCII && $0.isNumber })
        guard digits.count == 8, name.count == 8 + (gzip ? 9 : 6), let sequence = Int(digits), sequence >= 1 else { return nil }
        return (sequence, gzip)
    }
}
