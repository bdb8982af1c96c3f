import Foundation
import GRDB
import HealthProbeArchive
import HealthProbeProtocol
import HealthProbeCanonical

/// The server's data directory: `chains/<device_chain_hash>/replica.sqlite`,
/// one replica archive (the v2 schema, with its `bundle_log`) per device chain.
/// Chains never share a file, so identities are never merged across chains.
public struct ServerStore: Sendable {
    public let root: String

    public init(root: String) { self.root = root }
    var chainsDirectory: String { root + "/chains" }

    /// Creates the data directory: chains, the registry, and the TLS identity
    /// (kept when it exists, so running it again changes nothing).
    public func create(now: Date = Date()) throws {
        try UnfinishedRestore.refuse(root)
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        try FileManager.default.createDirectory(atPath: chainsDirectory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        if (try? ServerIdentity.load(directory: tlsDirectory)) == nil {
            try ServerIdentity.generate(now: now).write(directory: tlsDirectory)
        }
        _ = try DeviceRegistry(path: registryPath)
        let marker = root + "/healthprobe-server"
        if !FileManager.default.fileExists(atPath: marker) {
            try HomeDirectory.refresh(root)
            try Data("healthprobe server data directory\n".utf8).write(to: URL(fileURLWithPath: marker))
        }
    }

    /// Records the data directory's home when it has none yet (`serve` on a directory set up
    /// before homes were recorded), or its new path after a move within its file system (`HomeDirectory`).
    public func refreshHome() throws {
        try HomeDirectory.refresh(root)
    }

    public var tlsDirectory: String { root + "/tls" }
    /// The server's certificate (PEM).
    public var certificatePath: String { tlsDirectory + "/" + ServerIdentity.certificateFile }
    public var registryPath: String { root + "/server.sqlite" }

    /// The server's TLS identity.
    public func identity() throws -> ServerIdentity {
        try requireInitialized()
        return try ServerIdentity.load(directory: tlsDirectory)
    }

    /// The device registry.
    public func registry() throws -> DeviceRegistry {
        try requireInitialized()
        return try DeviceRegistry(path: registryPath)
    }

    /// The chain hash named by the header (first line) of a bundle file.
    public static func peekChain(file path: String) throws -> String {
        var lines = try StoredBundleLines(path: path)
        guard let first = lines.next() else { throw lines.failure ?? BundleError(.malformed, line: 1, "the bundle is empty") }
        return try BundleVerifier.header(first).deviceChainHash
    }

    /// For `init`: a data directory (run again, init changes nothing), or a new or empty
    /// directory (a config.json put there first is fine), not one holding something else.
    public func requireNewOrInitialized() throws {
        try UnfinishedRestore.refuse(root)
        let fm = FileManager.default
        guard !fm.fileExists(atPath: root + "/healthprobe-server"), let entries = try? fm.contentsOfDirectory(atPath: root) else { return }
        // What an init stopped part way leaves (the marker is written last) is its own: run again, it finishes.
        let own: Set<String> = ["config.json", "lost+found", "chains", "tls"]
        let other = entries.filter { !own.contains($0) && !$0.hasPrefix("server.sqlite") && !$0.hasPrefix(HomeDirectory.fileName) }.sorted()
        guard other.isEmpty else {
            throw ArchiveError(.invalidState, "\(root) is neither empty nor a HealthProbe server data directory (it holds \(other.prefix(3).joined(separator: ", "))"
                               + "\(other.count > 3 ? " and \(other.count - 3) more" : "")): give a new or empty directory, or check the path; nothing was written")
        }
    }

    public func requireInitialized() throws {
        try UnfinishedRestore.refuse(root)
        guard FileManager.default.fileExists(atPath: root + "/healthprobe-server") else {
            guard FileManager.default.fileExists(atPath: root) else {
                throw ArchiveError(.notFound, "\(root) does not exist: check --data (a new server's data directory is made with `hp-server init --data \(root)`)")
            }
            throw ArchiveError(.notFound, "\(root) is not a HealthProbe server data directory (it has no healthprobe-server marker): check --data "
                               + "(a new server's data directory is made with `hp-server init --data DIR` in a new or empty directory)")
        }
    }

    public func replicaPath(_ chainHash: String) -> String { chainsDirectory + "/\(chainHash)/replica.sqlite" }

    /// Chain hashes with a replica.
    public func chains() throws -> [String] {
        try requireInitialized()
        return try FileManager.default.contentsOfDirectory(atPath: chainsDirectory)
            .filter { $0.count == 64 && FileManager.default.fileExists(atPath: replicaPath($0)) }.sorted()
    }

    /// The one chain whose hash starts with `prefix`.
    public func chain(matching prefix: String) throws -> String {
        let matches = try chains().filter { $0.hasPrefix(prefix.lowercased()) }
        guard matches.count == 1 else {
            throw ArchiveError(.notFound, matches.isEmpty ? "no chain starts with \(prefix); list them with `hp-server chains`" : "\(prefix) matches \(matches.count) chains; give more characters")
        }
        return matches[0]
    }
}

extension ServerStore {
    /// Opens (creating if needed) the replica of `chainHash`.
    public func openReplica(_ chainHash: String) throws -> Archive {
        let path = replicaPath(chainHash.lowercased())
        try PrivateFiles.makeDirectory(chainsDirectory + "/\(chainHash.lowercased())")
        let fresh = !FileManager.default.fileExists(atPath: path)
        if fresh { try copyTemplate(to: path) }
        // Acknowledged means on disk: every replica commit is synced (`.full`).
        // 48 MiB of page cache per apply running: the server's memory is bounded by
        // the applies in flight (one per chain), not by the chains kept open.
        // One connection: the server's readers (summary, verify) open their own.
        func open() throws -> Archive { try Archive.open(path: path, durability: .full, writerCacheMiB: 48, singleConnection: true) }
        let archive: Archive
        do {
            archive = try open()
        } catch where fresh {
            // A damaged template: drop it and the empty copy, and migrate this one from scratch.
            let fm = FileManager.default
            for file in [replicaTemplatePath, path, path + "-wal", path + "-shm"] { try? fm.removeItem(atPath: file) }
            archive = try open()
        }
        if fresh {
            try archive.stampCreatedAt(Date().timeIntervalSince1970)
        }
        // Only `BundleApplier` writes a replica, and it resolves every reference a row
        // holds by looking the row up (or inserting it) first, refusing the bundle as
        // `unresolved` otherwise: SQLite's foreign-key checks on each insert (about 14
        // lookups per sample, 5% of an apply) could never fire. `hp-server verify`
        // still runs `PRAGMA foreign_key_check` on every replica.
        try archive.disableForeignKeyChecks()
        try archive.prepareForApplies()
        return archive
    }

    /// An empty replica at the latest schema, made once and copied for each new
    /// chain: running every migration for each new chain cost more than applying
    /// its first bundle. Disposable (`cache/`); rebuilt when missing.
    var replicaTemplatePath: String { root + "/cache/replica-schema-v\(ArchiveMigrations.latestVersion).sqlite" }

    /// Makes the template when it is missing (the server does it before it listens,
    /// so that no bundle waits for it).
    public func ensureReplicaTemplate() throws {
        let fm = FileManager.default
        let template = replicaTemplatePath
        guard !fm.fileExists(atPath: template) else { return }
        try PrivateFiles.makeDirectory(root + "/cache")
        let staged = template + ".\(UUID().uuidString)"
        defer { for suffix in ["", "-wal", "-shm", ".lock"] { try? fm.removeItem(atPath: staged + suffix) } }
        try Self.makeTemplate(at: staged)
        try Self.synced(staged)
        if !fm.fileExists(atPath: template) { try? fm.moveItem(atPath: staged, toPath: template) }
    }

    /// Copies the template (made first if missing) to `path`, synced, by rename.
    func copyTemplate(to path: String) throws {
        let fm = FileManager.default
        let template = replicaTemplatePath
        try ensureReplicaTemplate()
        let staged = path + ".new"
        defer { try? fm.removeItem(atPath: staged) }
        try? fm.removeItem(atPath: staged)
        try PrivateFiles.copySynced(template, to: staged)
        try fm.moveItem(atPath: staged, toPath: path)
    }

    /// Migrates a new archive at `path` and closes it with its WAL checkpointed into the file.
    static func makeTemplate(at path: String) throws {
        let archive = try Archive.open(path: path, singleConnection: true)
        try archive.checkpointAndClose()
    }

    /// Syncs the file at `path` to disk.
    static func synced(_ path: String) throws {
        guard let handle = FileHandle(forUpdatingAtPath: path) else {
            throw ArchiveError(.storage, "cannot open \(path) to sync it to disk (is the data directory writable and not full?)")
        }
        defer { try? handle.close() }
        try handle.synchronize()
    }

    /// The last received sequence and manifest hash of a chain (0, nil when new).
    /// One read-only connection, not a whole `Archive`: every sync session asks, and
    /// opening the replica as an archive (a pool, the migration check) cost more than
    /// the query.
    public func status(_ chainHash: String) throws -> (Int, String?) {
        let path = replicaPath(chainHash.lowercased())
        guard FileManager.default.fileExists(atPath: path) else { return (0, nil) }
        let last = try Self.readOnlyConnection(path).read(BundleLogRecord.lastReceived)
        return (last?.sequence ?? 0, last?.manifestHash)
    }

    /// Removes a chain's directory (its replica and bundles): for a chain whose first
    /// bundle was refused, so that a refusal stores nothing. The caller has closed the replica.
    public func discardChain(_ chainHash: String) {
        guard chainHash.count == 64 else { return }
        try? FileManager.default.removeItem(atPath: chainsDirectory + "/\(chainHash.lowercased())")
    }

    /// Held by the serving process: one server per data directory, and tools that
    /// settle files a server owns (`.incoming` bundles, quarantine) do so only when no
    /// server holds it.
    public var serverLockPath: String { root + "/server.lock" }

    /// Takes the serving lock, or says which process must stop first.
    public func lockServing() throws -> FileLock {
        try FileLock(path: serverLockPath, busy: "another hp-server is serving \(root) (lock \(serverLockPath)); stop it first")
    }

    /// The serving lock when no server holds it (nil: a server is running).
    public func lockIfNotServing() -> FileLock? { try? FileLock(path: serverLockPath) }

    /// Deletes what received bundles left in quarantine (a server killed while receiving).
    /// Only the serving process, holding the lock, calls it before it listens.
    @discardableResult
    public func sweepQuarantine() -> Int {
        let fm = FileManager.default
        guard let names = try? fm.contentsOfDirectory(atPath: quarantineDirectory) else { return 0 }
        var removed = 0
        for name in names where (try? fm.removeItem(atPath: quarantineDirectory + "/" + name)) != nil { removed += 1 }
        return removed
    }

    /// Reads a replica on its own read-only connection (the web layer, summaries).
    public func readReplica<T>(_ chainHash: String, _ body: (Database) throws -> T) throws -> T {
        let path = replicaPath(chainHash.lowercased())
        guard FileManager.default.fileExists(atPath: path) else {
            throw ArchiveError(.notFound, "no replica for chain \(chainHash.prefix(16)); list them with `hp-server chains`")
        }
        return try Self.readOnlyConnection(path).read(body)
    }

    /// One read-only connection to a replica (no pool, no migration), waiting up to
    /// 10 s for the locks of the server's writer and other readers. A replica at an
    /// older schema is refused: its columns would be read with this build's meaning
    /// (`hp-server serve` migrates every replica before it listens).
    static func readOnlyConnection(_ path: String) throws -> DatabaseQueue {
        let queue = try readOnlyQueue(path)
        try requireLatestSchema(queue, path: path)
        return queue
    }

    /// Refuses a replica at an older schema: its columns would be read with this build's meaning.
    static func requireLatestSchema(_ reader: some DatabaseReader, path: String) throws {
        let version = try reader.read(ArchiveMigrations.appliedVersion)
        guard version == ArchiveMigrations.latestVersion else {
            throw ArchiveError(.invalidState, "the replica at \(path) has schema version \(version) and this build reads \(ArchiveMigrations.latestVersion); start `hp-server serve` once (it migrates every replica before it listens)")
        }
    }

    /// Brings every replica to this build's schema (each in its own transaction; a
    /// failure leaves that replica as it was and stops here). Returns how many were migrated.
    @discardableResult
    public func migrateReplicas(progress: (String) -> Void = { _ in }) throws -> Int {
        var migrated = 0
        for chain in try chains() {
            let path = replicaPath(chain)
            let version = try Self.readOnlyQueue(path).read(ArchiveMigrations.appliedVersion)
            guard version < ArchiveMigrations.latestVersion else { continue }
            progress(chain)
            let archive = try Archive.open(path: path, durability: .full, singleConnection: true)
            try archive.checkpointAndClose()
            migrated += 1
        }
        return migrated
    }

    /// One read-only connection, no checks.
    private static func readOnlyQueue(_ path: String) throws -> DatabaseQueue {
        var config = Configuration()
        config.readonly = true
        config.busyMode = .timeout(10)
        return try DatabaseQueue(path: path, configuration: config)
    }

    /// Where bundles being received are kept until verified and applied.
    public var quarantineDirectory: String { root + "/quarantine" }

    /// Verifies the bundle file at `path` (gzip members as received, or lines) and
    /// applies it to its chain's replica (one transaction: nothing is stored unless
    /// every check passes). `bundleBytes`, the bundle's size inflated (the file's
    /// size when nil), decides whether the replica's indexes are built after the
    /// items. `kept` gives the chain's replica when the caller keeps replicas open.
    /// `sequence`, when given, is the one the bundle was announced with (`BUNDLE_BEGIN`, or
    /// its place in a backup): its header must say the same, or nothing is stored.
    /// `manifestHash` nil takes the hash the verification computes (`BundleApplier.apply`).
    /// `claim` runs inside the transaction of an applied bundle, before its commit: what it
    /// throws refuses the bundle (a sync server claims the chain for the sending device there).
    public func apply(file path: String, manifestHash: String?, sequence announced: Int? = nil, now: Double, bundleBytes: Int? = nil,
                      replica kept: ((String) throws -> Archive)? = nil, claim: () throws -> Void = {}) throws -> (chain: String, outcome: BundleApplier.Outcome) {
        var lines = try StoredBundleLines(path: path)
        guard let first = lines.next() else { throw lines.failure ?? BundleError(.malformed, line: 1, "the bundle is empty") }
        // Checked (hex, integer ranges) before anything is opened or named after it.
        let header = try BundleVerifier.header(first)
        let chain = header.deviceChainHash, sequence = header.sequence
        if let announced, announced != sequence {
            throw BundleError(.malformed, line: 1, "line 1: the header's sequence \(sequence) is not \(announced), the sequence the bundle came as (its BUNDLE_BEGIN's, or its place in a backup)")
        }
        let replica = try kept?(chain) ?? openReplica(chain)
        // Kept first under an `.incoming` name, promoted only once the apply committed:
        // a crash in between leaves a file `recoverIncoming` settles from the bundle log.
        // A crash can have left only this sequence (re-sent) or the previous one unpromoted.
        try recoverIncoming(chain, replica: replica, sequences: [sequence - 1, sequence])
        let incoming = try keep(file: path, chain: chain, sequence: sequence, gzip: lines.isGzip)
        do {
            // A chain's first sync is one large bundle: its indexes are built after its rows.
            let bytes = bundleBytes ?? (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
            let rest = Prepended(first: first, rest: lines)
            let outcome: BundleApplier.Outcome
            do {
                // Damage after the trailer's line (a member that does not check, bytes after the last)
                // ends the lines as cleanly as the file's end: refused before anything is committed.
                outcome = try BundleApplier.apply(replica, lines: rest, manifestHash: manifestHash, now: now, indexes: .automatic(bundleBytes: bytes),
                                                  beforeCommit: { _, outcome in
                                                      if let damage = rest.rest.failure { throw damage }
                                                      if case .applied = outcome { try claim() }
                                                      Failpoints.beforeCommit()
                                                  })
            } catch {
                // Lines that ended at a damaged member: say so rather than "truncated".
                throw rest.rest.failure ?? error
            }
            if case .applied = outcome { try promote(incoming) } else { try? FileManager.default.removeItem(atPath: incoming) }
            return (chain, outcome)
        } catch {
            try? FileManager.default.removeItem(atPath: incoming)
            throw error
        }
    }

    /// Verifies and applies a bundle while its parts still arrive (`lines`, header first, as
    /// `ArrivingLines` hands them over), in one transaction, as `apply(file:)` does. The parts
    /// are written meanwhile to the quarantine file at `path`, which is kept as the bundle
    /// only once the transfer ended whole (`transferChecked`, called before the commit: it
    /// throws otherwise, and nothing is stored). `header` is the bundle's first line, decoded.
    /// `manifestHash` nil: a streamed bundle, whose hash `manifestHashAtEnd` gives once its
    /// lines ended and whose indexes are built after its rows when it is the chain's first
    /// (`bundleBytes` nil: its size is not known before its end).
    public func apply(arriving lines: ArrivingLines.Lines, header: BundleHeader, file path: String, manifestHash: String?,
                      manifestHashAtEnd: (() throws -> String)? = nil, sequence announced: Int,
                      now: Double, bundleBytes: Int?, transferChecked: () throws -> Void,
                      replica kept: ((String) throws -> Archive)? = nil, claim: () throws -> Void = {}) throws -> BundleApplier.Outcome {
        let chain = header.deviceChainHash, sequence = header.sequence
        guard announced == sequence else {
            throw BundleError(.malformed, line: 1, "line 1: the header's sequence \(sequence) is not \(announced), the sequence the bundle came as (its BUNDLE_BEGIN's, or its place in a backup)")
        }
        let replica = try kept?(chain) ?? openReplica(chain)
        try recoverIncoming(chain, replica: replica, sequences: [sequence - 1, sequence])
        var incoming: String?
        do {
            let indexes: BundleApplier.IndexMode = bundleBytes.map { .automatic(bundleBytes: $0) } ?? .whenEmpty
            let outcome = try BundleApplier.apply(replica, lines: lines, manifestHash: manifestHash, now: now, indexes: indexes,
                                                  manifestHashAtEnd: manifestHash == nil ? manifestHashAtEnd : nil,
                                                  beforeCommit: { _, outcome in
                                                      guard case .applied = outcome else { return }
                                                      // The file is whole only once the transfer is: kept (and synced) then.
                                                      try transferChecked()
                                                      try claim()
                                                      incoming = try keep(file: path, chain: chain, sequence: sequence, gzip: true)
                                                      Failpoints.beforeCommit()
                                                  })
            if case .applied = outcome, let incoming { try promote(incoming) }
            return outcome
        } catch {
            if let incoming { try? FileManager.default.removeItem(atPath: incoming) }
            throw error
        }
    }

    /// Promotes `.incoming` bundle files whose sequence the replica's log holds
    /// (the apply committed before a crash), and deletes the others.
    /// `sequences` limits the look to those files; nil lists the directory.
    public func recoverIncoming(_ chain: String, replica: Archive, sequences: [Int]? = nil) throws {
        let dir = bundlesDirectory(chain)
        let names: [String]
        if let sequences {
            names = sequences.flatMap { seq in [true, false].map { (bundlePath(chain, sequence: seq, gzip: $0) as NSString).lastPathComponent + ".incoming" } }
                .filter { FileManager.default.fileExists(atPath: dir + "/" + $0) }
        } else {
            guard let all = try? FileManager.default.contentsOfDirectory(atPath: dir) else { return }
            names = all
        }
        for name in names where name.hasSuffix(".jsonl.incoming") || name.hasSuffix(".jsonl.gz.incoming") {
            let path = dir + "/" + name
            guard let seq = Int(name.prefix(while: { $0.isNumber })) else { try? FileManager.default.removeItem(atPath: path); continue }
            let logged = try replica.isBundleReceived(sequence: seq)
            if logged && storedBundlePath(chain, sequence: seq) == nil { try promote(path) }
            else { try? FileManager.default.removeItem(atPath: path) }
        }
    }

    func promote(_ incoming: String) throws {
        try FileManager.default.moveItem(atPath: incoming, toPath: String(incoming.dropLast(".incoming".count)))
    }

    /// Where a chain's received bundles are kept, as received, for re-verification.
    public func bundlesDirectory(_ chainHash: String) -> String { chainsDirectory + "/\(chainHash)/bundles" }

    /// The kept bundle file of a sequence: `<sequence>.jsonl.gz`, the parts as received
    /// (`GzipParts`), or `<sequence>.jsonl`, its lines (bundles kept before 2026-11-25).
    public func bundlePath(_ chainHash: String, sequence: Int, gzip: Bool = true) -> String {
        bundlesDirectory(chainHash) + String(format: "/%08d.jsonl", sequence) + (gzip ? ".gz" : "")
    }

    /// The kept bundle file of a sequence in whichever form it was kept; nil when there is none.
    public func storedBundlePath(_ chainHash: String, sequence: Int) -> String? {
        [true, false].map { bundlePath(chainHash, sequence: sequence, gzip: $0) }.first { FileManager.default.fileExists(atPath: $0) }
    }

    /// Keeps a received bundle as `<sequence>.jsonl[.gz].incoming` (a hard link, else a copy), synced to disk.
    func keep(file path: String, chain: String, sequence: Int, gzip: Bool) throws -> String {
        let fm = FileManager.default
        try PrivateFiles.makeDirectory(bundlesDirectory(chain))
        let target = bundlePath(chain, sequence: sequence, gzip: gzip) + ".incoming"
        if fm.fileExists(atPath: target) { try fm.removeItem(atPath: target) }
        do { try fm.linkItem(atPath: path, toPath: target) } catch { try fm.copyItem(atPath: path, toPath: target) }
        try? Self.synced(target)
        return target
    }
}

/// `first`, then the rest of the lines.
public struct Prepended: Sequence, IteratorProtocol, LineEndReporting {
    var first: [UInt8]?
    var rest: StoredBundleLines
    public init(first: [UInt8], rest: StoredBundleLines) { self.first = first; self.rest = rest }
    public var lastLineUnterminated: Bool { rest.lastLineUnterminated }
    public mutating func next() -> [UInt8]? {
        if let f = first { first = nil; return f }
        return rest.next()
    }
}
