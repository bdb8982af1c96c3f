import Foundation
import HealthProbeArchive
import NIOPosix

/// Copies a data directory's stored bundles and registry snapshots to object storage
/// (`OffsiteKeys`): each object read back after its put and its hash compared.
public struct OffsiteUploader: Sendable {
    public let store: ServerStore
    public let registry: DeviceRegistry
    public let objects: ObjectStore

    public init(store: ServerStore, registry: DeviceRegistry, objects: ObjectStore) {
        self.store = store
        self.registry = registry
        self.objects = objects
    }

    /// Queues every stored bundle not queued yet (bundles kept before uploads were
    /// configured, or accepted by a server stopped before it queued them). Returns the chains looked at.
    @discardableResult
    public func backfill(now: Double) throws -> Int {
        let chains = try store.chains()
        for chain in chains {
            let names = (try? FileManager.default.contentsOfDirectory(atPath: store.bundlesDirectory(chain))) ?? []
            try registry.enqueueUploads(chain: chain, sequences: names.compactMap { ChainName.bundleFile($0)?.0 }, now: now)
        }
        return chains.count
    }

    /// Uploads one queued bundle and reads it back; returns its key.
    public func upload(_ item: OffsiteQueue.Pending, now: Double) async throws -> String {
        guard let path = store.storedBundlePath(item.chain, sequence: item.sequence) else {
            throw ArchiveError(.notFound, "chain \(item.chain.prefix(16)) sequence \(item.sequence): no stored bundle in \(store.bundlesDirectory(item.chain)) (not promoted yet, or removed); run `hp-server verify --data \(store.root)`")
        }
        let sha = try await Self.blocking { try FileHash.sha256(path) }
        let key = objects.key(OffsiteKeys.bundle(chain: item.chain, sequence: item.sequence, sha256: sha, gzip: path.hasSuffix(".gz")))
        try await putChecked(key: key, file: path, sha256: sha)
        try await Self.blocking { [registry] in try registry.markUploaded(chain: item.chain, sequence: item.sequence, sha256: sha, key: key, now: now) }
        return key
    }

    /// Uploads the TLS identity and a registry snapshot under `snapshots/<time>/`, the registry last.
    public func snapshot(now: Double) async throws -> String {
        let name = OffsiteKeys.snapshot(at: now).dropFirst("snapshots/".count)
        let directory = objects.key(OffsiteKeys.snapshot(at: now))
        // Recorded first: a snapshot uploaded but not recorded would be taken for another server's.
        try await Self.blocking { [registry] in try registry.recordOffsiteSnapshot(String(name), now: now) }
        let file = try scratchFile("offsite-snapshot", suffix: ".sqlite")
        defer { try? FileManager.default.removeItem(atPath: file) }
        for name in try FileManager.default.contentsOfDirectory(atPath: store.tlsDirectory).sorted() where !name.hasPrefix(".") {
            let path = store.tlsDirectory + "/" + name
            let sha = try await Self.blocking { try FileHash.sha256(path) }
            try await putChecked(key: "\(directory)/tls/\(name)-\(sha)", file: path, sha256: sha)
        }
        let sha = try await Self.blocking { [registry] in
            try registry.snapshot(to: file)
            return try FileHash.sha256(file)
        }
        try await putChecked(key: "\(directory)/server.sqlite-\(sha)", file: file, sha256: sha)
        return directory
    }

    /// Deletes the registry snapshots older than the newest `keep` complete ones (a
    /// snapshot is complete once its `server.sqlite-<sha>` is in, written last); returns
    /// how many snapshots were deleted. Bundles are never deleted.
    public func pruneSnapshots(keep: Int) async throws -> Int {
        let base = objects.key("snapshots/")
        var groups: [String: [String]] = [:]
        for key in try await objects.list(prefix: base) {
            guard let name = key.dropFirst(base.count).split(separator: "/", maxSplits: 1).first else { continue }
            groups[String(name), default: []].append(key)
        }
        let complete = groups.filter { $0.value.contains { $0.dropFirst(base.count).contains("/server.sqlite-") } }.keys.sorted()
        guard complete.count > keep, keep >= 1 else { return 0 }
        // Everything before the oldest snapshot kept goes, complete or not (a newer unfinished one may be in progress).
        let oldestKept = complete[complete.count - keep]
        let doomed = groups.keys.filter { $0 < oldestKept }.sorted()
        for name in doomed {
            // The registry first: a half-deleted snapshot is never taken for a complete one.
            let keys = groups[name]!
            for key in keys.filter({ $0.contains("/server.sqlite-") }) + keys.filter({ !$0.contains("/server.sqlite-") }) {
                try await objects.delete(key: key)
            }
        }
        return doomed.count
    }

    /// What `checkBucket` found in the prefix.
    public enum BucketCheck: Sendable, Equatable {
        /// This server may write: the newest snapshot is one it knows (or the prefix holds none).
        case ok
        /// Taken over: `writer-conflict` says so with this server's new takeover id, every snapshot there is known.
        case tookOver(snapshots: Int, implicit: Bool)
        /// The newest complete snapshot is not this server's: `writer-conflict` put, this server pauses.
        case foreign(newest: String, ours: String)
        /// `writer-conflict` says a second writer was found, or that another server took the prefix over (`by` it): this server pauses.
        case marked(takenOver: Bool, by: String?)
        /// The prefix holds snapshots, none this server's: another server's prefix; this server pauses.
        case occupied(snapshots: Int)
    }

    /// What `writer-conflict` holds: `conflict` (a second writer found), or `taken_over` by the
    /// server holding `takeover_id` (a random id made by that takeover, in its registry alone:
    /// a copy made before it does not hold it). Overwritten, never deleted: a key needs no
    /// delete permission, and a copy that looks late still finds it.
    struct WriterMark: Codable, Equatable {
        var state: String
        var takeoverID: String?
        var at: Double
        /// The host name and data directory of the server that wrote it, for the administrator.
        var by: String?
        enum CodingKeys: String, CodingKey { case state, takeoverID = "takeover_id", at, by }

        /// What it says to the server whose last takeover id is `ours`: its own takeover says nothing.
        func meaning(ours: String?) -> WriterMarkState {
            guard state == "taken_over" else { return .conflict(by: by) }
            return takeoverID != nil && takeoverID == ours ? .none : .takenOverByAnother(by: by)
        }
    }

    /// A new path in the data directory's cache for a file of the moment (the caller removes it).
    func scratchFile(_ name: String, suffix: String = "") throws -> String {
        try PrivateFiles.makeDirectory(store.root + "/cache")
        return store.root + "/cache/\(name)-\(UUID().uuidString)\(suffix)"
    }

    /// This server, as a mark and the messages name it: host name and data directory.
    var writerName: String { "\(ProcessInfo.processInfo.hostName):\(store.root)" }

    /// Reads `writer-conflict`; nil when there is none. One that does not parse counts as a conflict.
    func writerMark() async throws -> WriterMark? {
        let key = objects.key(SnapshotWriters.conflictKey)
        guard try await objects.list(prefix: key).contains(key) else { return nil }
        let file = try scratchFile("writer-conflict")
        defer { try? FileManager.default.removeItem(atPath: file) }
        try await objects.get(key: key, to: file, maxBytes: 4096)
        let data = (try? Data(contentsOf: URL(fileURLWithPath: file))) ?? Data()
        return (try? JSONDecoder().decode(WriterMark.self, from: data)) ?? WriterMark(state: "conflict", takeoverID: nil, at: 0, by: nil)
    }

    /// What `writer-conflict` says to a server that has not paused: nothing, a conflict (a
    /// second writer was found, no server took the prefix over since), or another server's
    /// takeover (this one will pause at its next check); `by` names the server that wrote it.
    public enum WriterMarkState: Sendable, Equatable { case none, conflict(by: String?), takenOverByAnother(by: String?) }

    public func writerMarkState() async throws -> WriterMarkState {
        guard let mark = try await writerMark() else { return .none }
        return mark.meaning(ours: try await Self.blocking { [registry] in try registry.offsiteTakeoverID() })
    }

    func putWriterMark(_ mark: WriterMark) async throws {
        let file = try scratchFile("writer-conflict")
        defer { try? FileManager.default.removeItem(atPath: file) }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        try encoder.encode(mark).write(to: URL(fileURLWithPath: file))
        try await objects.put(key: objects.key(SnapshotWriters.conflictKey), file: file, sha256: try FileHash.sha256(file))
    }

    /// Whether a complete snapshot among `keys` carries the TLS identity in `tlsDirectory` (the
    /// files' hashes in its keys): a prefix this server wrote before names were recorded.
    static func holdsOwnIdentity(_ keys: [String], base: String, tlsDirectory: String) throws -> Bool {
        let own = Set(try FileManager.default.contentsOfDirectory(atPath: tlsDirectory).filter { !$0.hasPrefix(".") }
            .map { "\($0)-\(try FileHash.sha256(tlsDirectory + "/" + $0))" })
        let (registries, identities) = ObjectStoreRestoreSource.snapshots(keys, base: base)
        return registries.keys.contains { time in
            guard let files = identities[time], !files.isEmpty else { return false }
            return Set(files.map { "\($0.name)-\($0.sha)" }) == own
        }
    }

    /// Whether this server may write the prefix (`SnapshotWriters`). `takeover`: `adopt` asked
    /// for it. A server with no names recorded takes over an empty prefix, or one holding a
    /// snapshot of its own TLS identity (written before names were recorded: an upgrade).
    public func checkBucket(takeover: Bool, now: Double) async throws -> BucketCheck {
        let mark = try await writerMark()
        let base = objects.key("snapshots/")
        let keys = try await objects.list(prefix: base)
        let complete = ObjectStoreRestoreSource.completeSnapshots(keys, base: base)
        let registry = self.registry
        let (known, takeoverID) = try await Self.blocking { (try registry.offsiteSnapshots(), try registry.offsiteTakeoverID()) }
        var implicit = false
        if !takeover, known.isEmpty, mark == nil {
            let tls = store.tlsDirectory
            if complete.isEmpty { implicit = true } else { implicit = try await Self.blocking { try Self.holdsOwnIdentity(keys, base: base, tlsDirectory: tls) } }
        }
        if takeover || implicit {
            // A takeover is said in the prefix (so a copy finds it however late it looks) only when it ends a conflict.
            if takeover, mark != nil {
                let id = UUID().uuidString.lowercased()
                try await Self.blocking { try registry.setOffsiteTakeoverID(id) }
                try await putWriterMark(WriterMark(state: "taken_over", takeoverID: id, at: now, by: writerName))
            }
            try await Self.blocking { try registry.recordFoundSnapshots(complete, now: now) }
            return .tookOver(snapshots: complete.count, implicit: implicit)
        }
        if known.isEmpty { return .occupied(snapshots: complete.count) }
        switch mark?.meaning(ours: takeoverID) {
        case .conflict(let by)?: return .marked(takenOver: false, by: by)
        case .takenOverByAnother(let by)?: return .marked(takenOver: true, by: by)
        case .none?, nil: break
        }
        guard let ours = known.max(), let newest = complete.last, !known.contains(newest), newest > ours else { return .ok }
        try await putWriterMark(WriterMark(state: "conflict", takeoverID: nil, at: now, by: writerName))
        return .foreign(newest: newest, ours: ours)
    }

    /// File and SQLite work on a thread of NIO's pool, never on Swift's cooperative threads.
    static func blocking<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await NIOThreadPool.singleton.runIfActive(body)
    }

    /// Puts, then reads the object back and compares its hash.
    func putChecked(key: String, file: String, sha256: String) async throws {
        try await objects.put(key: key, file: file, sha256: sha256)
        let back = try await objects.get(key: key)
        guard back == sha256 else {
            throw ArchiveError(.storage, "object storage \(objects.location) returned different bytes for \(key) after the put (SHA-256 \(back.prefix(16)), expected \(sha256.prefix(16))); it stays queued")
        }
    }
}
