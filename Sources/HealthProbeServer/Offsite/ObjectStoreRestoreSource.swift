import Foundation
import HealthProbeArchive

/// A bucket written by `OffsiteService`: the latest complete registry snapshot and
/// every chain's bundles, each object's hash checked against its key when read.
public struct ObjectStoreRestoreSource: RestoreSource {
    let objects: ObjectStore
    public var location: String { objects.prefixLocation }

    public init(objects: ObjectStore) { self.objects = objects }

    /// The registry snapshots among `keys` (listed under `base`, the prefix's `snapshots/`):
    /// `snapshots/<time>/server.sqlite-<sha>` and `snapshots/<time>/tls/<name>-<sha>`, grouped by time.
    static func snapshots(_ keys: [String], base: String) -> (registries: [String: (key: String, sha: String)], identities: [String: [(key: String, name: String, sha: String)]]) {
        var registries: [String: (key: String, sha: String)] = [:]
        var identities: [String: [(key: String, name: String, sha: String)]] = [:]
        for key in keys {
            let parts = key.dropFirst(base.count).split(separator: "/", omittingEmptySubsequences: false)
            if parts.count == 2, let (name, sha) = OffsiteKeys.parseHashed(parts[1]), name == "server.sqlite" {
                registries[String(parts[0])] = (key, sha)
            } else if parts.count == 3, parts[1] == "tls", let (name, sha) = OffsiteKeys.parseHashed(parts[2]),
                      !name.isEmpty, !name.contains("/"), !name.hasPrefix(".") {
                identities[String(parts[0]), default: []].append((key, name, sha))
            }
        }
        return (registries, identities)
    }

    /// The times of the complete snapshots among `keys`: a registry and its TLS identity (what a restore takes).
    static func completeSnapshots(_ keys: [String], base: String) -> [String] {
        let (registries, identities) = snapshots(keys, base: base)
        return registries.keys.filter { identities[$0] != nil }.sorted()
    }

    public func fetchRegistryAndIdentity(registry: String, tls: String) async throws {
        let base = objects.key("snapshots/")
        let (registries, identities) = Self.snapshots(try await objects.list(prefix: base), base: base)
        guard let time = registries.keys.filter({ identities[$0] != nil }).max(), let (key, sha) = registries[time] else {
            throw ArchiveError(.notFound, "\(location) holds no complete registry snapshot (snapshots/<time>/server.sqlite-<sha256> with tls/); check the bucket and prefix given as s3://BUCKET/PREFIX: the old server's s3_bucket and s3_prefix")
        }
        for (fileKey, name, fileSha) in identities[time] ?? [] {
            try await download(fileKey, sha256: fileSha, to: tls + "/" + name, maxBytes: 1 << 20)
        }
        let downloaded = registry + ".download"
        // With the files SQLite may have made beside it when it read it.
        defer { for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: downloaded + suffix) } }
        try await download(key, sha256: sha, to: downloaded, maxBytes: 1 << 32)
        try DeviceRegistry.snapshot(ofFile: downloaded, to: registry)
    }

    public func bundles() async throws -> [String: [RestoreSourceBundle]] {
        let base = objects.key("")
        var result: [String: [RestoreSourceBundle]] = [:]
        for key in try await objects.list(prefix: objects.key("chains/")) {
            guard let (chain, bundle) = OffsiteKeys.parseBundle(String(key.dropFirst(base.count))) else { continue }
            var b = bundle
            b.reference = key
            result[chain, default: []].append(b)
        }
        for (chain, list) in result {
            let sorted = list.sorted { $0.sequence < $1.sequence }
            for (a, b) in zip(sorted, sorted.dropFirst()) where a.sequence == b.sequence {
                throw ArchiveError(.invalidInput, "\(location): chain \(chain.prefix(16)) has two different bundles at sequence \(a.sequence) (\(a.sha256?.prefix(16) ?? "") and \(b.sha256?.prefix(16) ?? "")); remove the one the server did not keep")
            }
            result[chain] = sorted
        }
        return result
    }

    public func fetch(_ bundle: RestoreSourceBundle, to path: String) async throws {
        try await download(bundle.reference, sha256: bundle.sha256, to: path, maxBytes: 1 << 34)
    }

    public func expectedDigests() async throws -> [String: String] { [:] }

    func download(_ key: String, sha256: String?, to path: String, maxBytes: Int) async throws {
        let got = try await objects.get(key: key, to: path, maxBytes: maxBytes)
        if let sha256, got != sha256 {
            try? FileManager.default.removeItem(atPath: path)
            throw ArchiveError(.invalidInput, "the object \(key) in \(objects.location) has SHA-256 \(got.prefix(16)), its key names \(sha256.prefix(16)): it was altered or damaged")
        }
    }
}
