import Foundation
import GRDB
import HealthProbeArchive
import HealthProbeCanonical
import HealthProbeProtocol

/// `hp-server backup`: a consistent copy of a data directory taken while it is
/// served. Each replica and then the registry are copied with SQLite's online
/// backup (one read transaction each: commits go on meanwhile); each replica's
/// stored bundles are copied for exactly the sequences its copy logs. The result
/// is a data directory: `hp-server verify` runs on it and `hp-server restore`
/// rebuilds from it. docs/decisions/2026-11-29-backup.md says why replicas are copied.
public enum ServerBackup {
    /// What a backup holds of one chain (written to `backup.json`).
    public struct Chain: Sendable, Codable, Equatable {
        public var chain: String
        public var bundles: Int
        public var lastManifestHash: String?
        /// The chain-state digest after the last bundle (lower-case hex).
        public var digest: String?
        public var visibleCount: Int?
    }

    public struct Report: Sendable, Codable {
        public var target: String
        /// When the backup began (its registry and replicas are as they were then, or later).
        public var createdAt: Double
        /// When it was complete (`createdAt` plus its duration); absent in backups made before 2026-11-30.
        public var finishedAt: Double?
        public var chains: [Chain]
        public var bundleBytes: Int
        public var replicaBytes: Int
        public var registryBytes: Int
        public var seconds: Double
    }

    /// The backup's description, written last (with the directory marker).
    public static let manifestName = "backup.json"

    /// Copies `store` into `target`, which must be absent or empty.
    public static func run(_ store: ServerStore, to target: String, now: Double = Date().timeIntervalSince1970) throws -> Report {
        let started = ContinuousClock.now
        try store.requireInitialized()
        try DataDirectory.requireEmpty(target, what: "backup target")
        try PrivateFiles.makeDirectory(target)
        let copy = ServerStore(root: target)
        try PrivateFiles.makeDirectory(copy.chainsDirectory)
        try PrivateFiles.makeDirectory(copy.tlsDirectory)
        for name in try FileManager.default.contentsOfDirectory(atPath: store.tlsDirectory) {
            try PrivateFiles.copySynced(store.tlsDirectory + "/" + name, to: copy.tlsDirectory + "/" + name)
        }
        let config = store.root + "/config.json"
        if FileManager.default.fileExists(atPath: config) { try PrivateFiles.copySynced(config, to: target + "/config.json") }
        // Served as it is (a drill), the copy holds the live config: it must not upload or back up.
        try RestoredCopy.mark(target, what: "a backup of \(store.root) taken at \(CanonicalDate.string(now))")
        var chains: [Chain] = []
        var bundleBytes = 0, replicaBytes = 0
        for chain in try store.chains() {
            let (entry, bundles, replica) = try copyChain(chain, from: store, to: copy)
            chains.append(entry)
            bundleBytes += bundles
            replicaBytes += replica
        }
        // The registry last: every chain copied above has its owner in it.
        try store.registry().snapshot(to: copy.registryPath)
        let registryBytes = DataDirectory.size(copy.registryPath)
        let seconds = (ContinuousClock.now - started).seconds
        let report = Report(target: target, createdAt: now, finishedAt: now + seconds, chains: chains, bundleBytes: bundleBytes, replicaBytes: replicaBytes,
                            registryBytes: registryBytes, seconds: seconds)
        let encoder = JSONEncoder()
        encoder.keyEncodingStrategy = .convertToSnakeCase
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted]
        try encoder.encode(report).write(to: URL(fileURLWithPath: target + "/" + manifestName))
        try Data("healthprobe server data directory\n".utf8).write(to: URL(fileURLWithPath: target + "/healthprobe-server"))
        return report
    }

    /// Copies one chain: its replica (online backup), then its stored bundles for the
    /// sequences the copy logs. Returns the entry, the bundle bytes and the replica bytes.
    static func copyChain(_ chain: String, from store: ServerStore, to copy: ServerStore) throws -> (Chain, Int, Int) {
        try PrivateFiles.makeDirectory(copy.chainsDirectory + "/" + chain)
        try PrivateFiles.makeDirectory(copy.bundlesDirectory(chain))
        let target = copy.replicaPath(chain)
        let source = try ServerStore.readOnlyConnection(store.replicaPath(chain))
        let destination = try DatabaseQueue(path: target)
        try source.backup(to: destination)
        try destination.close()
        try source.close()
        try ServerStore.synced(target)
        // Opened once as the only writer and closed with its WAL in the file: a copy that
        // read-only tools (`verify`) open as they open any replica.
        let replica = try Archive.open(path: target, singleConnection: true)
        var closed = false
        defer { if !closed { try? replica.close() } }
        let links = try replica.receivedBundleLinks()
        var bytes = 0
        for link in links {
            bytes += try copyBundle(chain, sequence: link.sequence, from: store, to: copy)
        }
        let state = try links.last.flatMap { try replica.chainStateAfterReceived(sequence: $0.sequence) }
        closed = true
        try replica.checkpointAndClose()
        let entry = Chain(chain: chain, bundles: links.count, lastManifestHash: links.last?.manifestHash,
                          digest: state?.digest, visibleCount: state?.visibleCount)
        return (entry, bytes, DataDirectory.size(target))
    }

    /// Copies a stored bundle under its kept name. A bundle the server committed a
    /// moment ago may still be `.incoming` (promoted right after); either name is taken.
    static func copyBundle(_ chain: String, sequence: Int, from store: ServerStore, to copy: ServerStore) throws -> Int {
        for attempt in 0..<50 {
            for gzip in [true, false] {
                let kept = store.bundlePath(chain, sequence: sequence, gzip: gzip)
                for path in [kept, kept + ".incoming"] where FileManager.default.fileExists(atPath: path) {
                    let target = copy.bundlePath(chain, sequence: sequence, gzip: gzip)
                    do {
                        try PrivateFiles.copySynced(path, to: target)
                        return DataDirectory.size(target)
                    } catch where !FileManager.default.fileExists(atPath: path) {
                        continue  // renamed while opened: the other name has it
                    }
                }
            }
            if attempt < 49 { usleep(20_000) }
        }
        throw ArchiveError(.notFound, "chain \(chain.prefix(16)) sequence \(sequence): the replica logs it but \(store.bundlesDirectory(chain)) has no stored bundle for it; run `hp-server verify --data \(store.root)`")
    }
}
