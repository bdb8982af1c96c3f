import Foundation
import Synchronization
import HealthProbeArchive
import HealthProbeProtocol
import HealthProbeCanonical

/// `hp-server restore`: a new data directory from a backup. The registry and the TLS
/// identity come from the backup's snapshot (devices sync on without enrolling again);
/// every replica is rebuilt by applying its stored bundles in order, each verified
/// as the server verifies a bundle on receipt. Chains are rebuilt `jobs` at a time (each
/// into its own replica file), at most two bundles of each on disk at a time (the one applied
/// and the next, fetched meanwhile).
public enum ServerRestore {
    public struct Chain: Sendable, Codable, Equatable {
        public var chain: String
        public var bundles: Int
        public var digest: String?
        /// The digest the backup recorded for the chain; nil when it records none.
        public var expectedDigest: String?
    }

    public struct Report: Sendable, Codable {
        public var source: String
        public var target: String
        public var chains: [Chain]
        public var bundleBytes: Int
        public var seconds: Double
        /// True: a copy that takes no scheduled backup and uploads nothing until `hp-server adopt`.
        public var copy = false
    }

    /// Rebuilds a data directory at `target` (absent or empty) from `source`, `jobs` chains at
    /// a time (each apply takes about a core and a half and up to about 150 MB at a million
    /// samples; with more than one job, the first chain refused stops the others once the
    /// bundle each is applying ends).
    /// Unless `newHome`, the result is a paused copy (`RestoredCopy`) until `hp-server adopt`.
    /// `progress` is told the bundles applied so far of all the chains' bundles, after each one
    /// (from the chains' tasks: `jobs` of them may call it at once).
    public static func run(from source: some RestoreSource, to target: String, jobs: Int = 1, newHome: Bool = false,
                           now: Double = Date().timeIntervalSince1970,
                           progress: (@Sendable (_ applied: Int, _ of: Int) -> Void)? = nil) async throws -> Report {
        let started = ContinuousClock.now
        try UnfinishedRestore.refuse(target)
        try DataDirectory.requireEmpty(target, what: "restore target")
        let existed = FileManager.default.fileExists(atPath: target)
        try PrivateFiles.makeDirectory(target)
        // First: a restore stopped before its end leaves this, and nothing takes the directory for a data directory.
        do { try UnfinishedRestore.begin(target, source: source.location, now: now) } catch {
            // Not begun (another restore began first, or the disk refused): a directory this one
            // made goes only while empty (another restore's is not).
            if !existed, (try? FileManager.default.contentsOfDirectory(atPath: target))?.isEmpty == true {
                try? FileManager.default.removeItem(atPath: target)
            }
            throw error
        }
        do {
            var report = try await rebuild(from: source, to: target, jobs: jobs, now: now, started: started, progress: progress)
            if newHome {
                try HomeDirectory.record(target)
                // The new home takes the bucket prefix over (its registry names the old server's snapshots).
                try DeviceRegistry(path: target + "/server.sqlite").forgetOffsiteSnapshots()
                try SnapshotWriters.requestTakeover(target)
            } else {
                try RestoredCopy.mark(target, source: source.location, now: now)
            }
            report.copy = !newHome
            // Last: only a complete restore is a data directory `hp-server serve` takes.
            try Data("healthprobe server data directory\n".utf8).write(to: URL(fileURLWithPath: target + "/healthprobe-server"))
            try UnfinishedRestore.end(target)
            return report
        } catch {
            removeWritten(target, existed: existed)
            throw error
        }
    }

    /// The entries a restore writes into its target (besides `UnfinishedRestore`'s file).
    static let written = ["chains", "cache", "tls", "quarantine", "server.sqlite", "server.sqlite-wal", "server.sqlite-shm", "server.sqlite.download",
                          "server.sqlite.download-wal", "server.sqlite.download-shm", RestoredCopy.fileName, HomeDirectory.fileName,
                          HomeDirectory.fileName + ".new", SnapshotWriters.takeoverFileName, "healthprobe-server"]

    /// Refused or failed: what this restore wrote goes, so the same command can run again. Only
    /// its own entries (a config.json copied in meanwhile stays); the unfinished-restore file last,
    /// and only once everything else went, so a half directory never loses it; then the
    /// directory itself when the restore made it and it is empty.
    static func removeWritten(_ target: String, existed: Bool) {
        let fm = FileManager.default
        var left = false
        for name in written where fm.fileExists(atPath: target + "/" + name) {
            do { try fm.removeItem(atPath: target + "/" + name) } catch { left = true }
        }
        guard !left else { return }
        try? fm.removeItem(atPath: UnfinishedRestore.path(target))
        if !existed, (try? fm.contentsOfDirectory(atPath: target))?.isEmpty == true { try? fm.removeItem(atPath: target) }
    }

    /// The restore into the empty directory `target`, once its unfinished-restore file is written.
    static func rebuild(from source: some RestoreSource, to target: String, jobs: Int, now: Double, started: ContinuousClock.Instant,
                        progress: (@Sendable (Int, Int) -> Void)?) async throws -> Report {
        let store = ServerStore(root: target)
        for dir in [store.chainsDirectory, store.tlsDirectory, store.quarantineDirectory] { try PrivateFiles.makeDirectory(dir) }
        try await source.fetchRegistryAndIdentity(registry: store.registryPath, tls: store.tlsDirectory)
        let registry = try DeviceRegistry(path: store.registryPath)
        let problems = try registry.quickCheck()
        guard problems.isEmpty else {
            throw ArchiveError(.invalidInput, "the registry from \(source.location) is damaged (\(problems.prefix(3).joined(separator: "; "))); restore from an older backup")
        }
        do { _ = try ServerIdentity.load(directory: store.tlsDirectory) } catch {
            throw ArchiveError(.invalidInput, "the TLS identity from \(source.location) cannot be loaded (\(error)); without it every device must enroll again")
        }
        let expected = try await source.expectedDigests()
        let listed = try await source.bundles().sorted(by: { $0.key < $1.key })
        var rebuilt: [(Chain, Int)?] = Array(repeating: nil, count: listed.count)
        let applied = progress.map { AppliedCount(total: listed.reduce(0) { $0 + $1.value.count }, progress: $0) }
        try await withThrowingTaskGroup(of: (Int, Chain, Int).self) { group in
            var next = 0
            func startNext() {
                let (i, (chain, bundles)) = (next, listed[next])
                next += 1
                group.addTask {
                    let (entry, chainBytes) = try await rebuild(chain, bundles: bundles, from: source, into: store, expected: expected[chain], now: now,
                                                                applied: applied)
                    return (i, entry, chainBytes)
                }
            }
            while next < min(max(jobs, 1), listed.count) { startNext() }
            while let (i, entry, chainBytes) = try await group.next() {
                rebuilt[i] = (entry, chainBytes)
                if next < listed.count { startNext() }
            }
        }
        let chains = rebuilt.compactMap { $0?.0 }
        let bytes = rebuilt.reduce(0) { $0 + ($1?.1 ?? 0) }
        try? FileManager.default.removeItem(atPath: store.quarantineDirectory)
        return Report(source: source.location, target: target, chains: chains, bundleBytes: bytes, seconds: (ContinuousClock.now - started).seconds)
    }

    /// Bundles applied so far of all the chains' bundles, told to `progress` after each one
    /// (the chains' tasks add at once).
    final class AppliedCount: Sendable {
        private let count = Mutex(0)
        let total: Int
        let progress: @Sendable (Int, Int) -> Void

        init(total: Int, progress: @escaping @Sendable (Int, Int) -> Void) {
            self.total = total
            self.progress = progress
        }

        func add() { progress(count.withLock { $0 += 1; return $0 }, total) }
    }

    /// Whether `error` is the bundle's fault (its bytes, a check it fails), not the disk's or the database's.
    static func refuses(_ error: any Error) -> Bool {
        if let e = error as? ArchiveError { return e.code == .invalidInput }
        return error is BundleError || error is BundleApplier.ApplyError || error is GzipParts.ReadError || error is HashingError
    }

    /// Fetches `bundle` to `path`; what a failed fetch wrote is removed.
    static func fetchOrRemove(_ bundle: RestoreSourceBundle, from source: some RestoreSource, to path: String) async throws {
        do { try await source.fetch(bundle, to: path) } catch {
            try? FileManager.default.removeItem(atPath: path)
            throw error
        }
    }

    /// Applies one chain's bundles, 1...n in order, to a new replica, fetching each next one
    /// while the one before is applied.
    static func rebuild(_ chain: String, bundles: [RestoreSourceBundle], from source: some RestoreSource, into store: ServerStore,
                        expected: String?, now: Double, applied: AppliedCount? = nil) async throws -> (Chain, Int) {
        let where_ = "chain \(chain.prefix(16)) in \(source.location)"
        for (i, b) in bundles.enumerated() where b.sequence != i + 1 {
            throw ArchiveError(.invalidInput, "\(where_): sequence \(i + 1) is missing (found \(b.sequence) next); the chain cannot be rebuilt past it. Restore from another backup, or from object storage")
        }
        guard !bundles.isEmpty else { return (Chain(chain: chain, bundles: 0, digest: nil, expectedDigest: expected), 0) }
        let replica = try store.openReplica(chain)
        var closed = false
        defer { if !closed { try? replica.close() } }
        var bytes = 0
        /// A new file in the quarantine directory for a fetched bundle.
        func newFile() -> String { store.quarantineDirectory + "/restore-\(UUID().uuidString)" }
        var fetched = newFile()
        try await fetchOrRemove(bundles[0], from: source, to: fetched)
        for (i, b) in bundles.enumerated() {
            let file = fetched
            defer { try? FileManager.default.removeItem(atPath: file) }
            bytes += DataDirectory.size(file)
            // The next bundle is fetched while this one is applied (two on disk at most).
            let following = i + 1 < bundles.count ? bundles[i + 1] : nil, followingFile = newFile()
            var taken = false
            // Declared before the fetch: on leaving, the fetch is cancelled and awaited first, then this runs.
            defer { if !taken { try? FileManager.default.removeItem(atPath: followingFile) } }
            async let prefetched: Void = {
                if let following { try await fetchOrRemove(following, from: source, to: followingFile) }
            }()
            // Verified once, as it is applied: the bundles come without their manifest hashes, so
            // the apply takes the one its verification computes; the chain link to the bundle
            // before is checked all the same. Its header must name this chain and sequence
            // before anything is applied.
            do {
                // The apply (seconds to minutes of blocking SQLite work) on a thread of its own,
                // so that `jobs` chains apply at once whatever the cores and pools.
                let (_, outcome) = try await StageThread.run(name: "healthprobe.rebuild.apply") {
                    try store.apply(file: file, manifestHash: nil, sequence: b.sequence, now: now, replica: { named in
                        guard named == chain else { throw ArchiveError(.invalidInput, "its header names chain \(named.prefix(16))") }
                        return replica
                    })
                }
                guard case .applied = outcome else {
                    throw ArchiveError(.invalidInput, "it was taken for one applied before")
                }
            } catch let error where Self.refuses(error) {
                throw ArchiveError(.invalidInput, "\(where_): sequence \(b.sequence) (\(b.reference)) is refused: \(error)", cause: error)
            }
            applied?.add()
            try await prefetched
            (fetched, taken) = (followingFile, true)
        }
        let state = try await StageThread.run(name: "healthprobe.rebuild.digest") {
            let state = try replica.chainStateAfterReceived(sequence: bundles.count)
            try replica.checkpointAndClose()
            return state
        }
        closed = true
        if let expected, expected != state?.digest {
            throw ArchiveError(.invalidInput, "\(where_): rebuilt, the chain-state digest is \(state?.digest.prefix(16) ?? "none") but the backup recorded \(expected.prefix(16)); the backup's bundles and replica disagree, run `hp-server verify --full --data \(source.location)`")
        }
        return (Chain(chain: chain, bundles: bundles.count, digest: state?.digest, expectedDigest: expected), bytes)
    }
}
