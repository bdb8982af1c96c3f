import Foundation
import GRDB
import HealthProbeArchive
import Synchronization

/// Read-only connections to replicas kept open between reads, for a process that reads
/// the same replicas again and again (the dashboard). Opening a connection per read cost
/// a schema parse, the migration check and a cold page cache each time; a kept pool
/// answers from warm pages. Each chain's pool is opened at most `capacity` at once (least
/// recently used closed first) and is replaced when its file is (another inode: the chain
/// was discarded and made again, or restored).
public final class ReplicaReaders: Sendable {
    private struct Entry {
        let pool: DatabasePool
        let file: FileIdentity
        var used: UInt64
    }
    private struct State {
        var pools: [String: Entry] = [:]
        var clock: UInt64 = 0
    }
    /// A file's device and inode: a replaced file has another (a deleted replica's inode is
    /// not reused while a kept pool still holds it open).
    struct FileIdentity: Equatable {
        let device: UInt64
        let inode: UInt64

        init?(_ path: String) {
            var s = stat()
            guard stat(path, &s) == 0 else { return nil }
            device = UInt64(s.st_dev)
            inode = UInt64(s.st_ino)
        }
    }

    private let state = Mutex(State())
    let store: ServerStore
    /// Chains whose pools are kept open at once.
    let capacity: Int
    /// Readers per chain (the dashboard runs on as many cores).
    let readersPerChain: Int
    /// Each connection's page cache, in KiB: a kept chain costs at most (readers + 1) times
    /// this (a pool also holds a connection that only opens it); 32 chains, about 100 MB.
    static let cacheKiB = 1024

    public init(store: ServerStore, capacity: Int = 32, readersPerChain: Int = 2) {
        self.store = store
        self.capacity = max(1, capacity)
        self.readersPerChain = max(1, readersPerChain)
    }

    /// Runs `body` in a read transaction of the chain's replica (a snapshot: a bundle applied
    /// meanwhile is seen by the next read). A missing replica is `notFound`.
    public func read<T>(_ chainHash: String, _ body: (Database) throws -> T) throws -> T {
        try pool(chainHash.lowercased()).read(body)
    }

    /// The last received sequence of a chain (0 when it has no replica, or when it was
    /// discarded meanwhile: a refused first bundle).
    public func lastSequence(_ chainHash: String) throws -> Int {
        do {
            return try read(chainHash) { try BundleLogRecord.lastReceived($0)?.sequence ?? 0 }
        } catch let e as ArchiveError where e.code == .notFound {
            return 0
        }
    }

    /// Closes the pools of replicas whose file is gone or was replaced (a refused first
    /// bundle's chain is discarded, and nothing may read it again to find out). Called when
    /// a pool is opened and by the dashboard's warmer every few seconds.
    public func sweep() {
        let kept = state.withLock { s in s.pools.map { ($0.key, $0.value.file) } }
        let gone = kept.filter { chain, file in FileIdentity(store.replicaPath(chain)) != file }.map(\.0)
        guard !gone.isEmpty else { return }
        state.withLock { s in
            for chain in gone where FileIdentity(store.replicaPath(chain)) != s.pools[chain]?.file { s.pools[chain] = nil }
        }
    }

    /// How many chains have a pool open now.
    public var openCount: Int { state.withLock { $0.pools.count } }
    /// The chains with a pool open now.
    public var openChains: Set<String> { state.withLock { Set($0.pools.keys) } }

    private func pool(_ chain: String) throws -> DatabasePool {
        let path = store.replicaPath(chain)
        guard let file = FileIdentity(path) else {
            state.withLock { _ = $0.pools.removeValue(forKey: chain) }
            throw ArchiveError(.notFound, "no replica for chain \(chain.prefix(16)); list them with `hp-server chains`")
        }
        if let kept = state.withLock({ s -> DatabasePool? in
            guard let e = s.pools[chain], e.file == file else { return nil }
            s.clock += 1
            s.pools[chain]?.used = s.clock
            return e.pool
        }) { return kept }
        sweep()
        // Opened outside the lock: two first reads of a chain may both open one; one is kept.
        let opened = try Self.open(path, readers: readersPerChain)
        return state.withLock { s in
            if let e = s.pools[chain], e.file == file { return e.pool }
            s.clock += 1
            s.pools[chain] = Entry(pool: opened, file: file, used: s.clock)
            while s.pools.count > capacity, let oldest = s.pools.min(by: { $0.value.used < $1.value.used })?.key {
                s.pools[oldest] = nil
            }
            return opened
        }
    }

    /// A read-only pool on a replica at this build's schema (an older one is refused, as
    /// `ServerStore.readReplica` does).
    static func open(_ path: String, readers: Int) throws -> DatabasePool {
        let pool = try DatabasePool(path: path, configuration: Archive.keptReaderConfiguration(readers: readers, cacheKiB: cacheKiB))
        try ServerStore.requireLatestSchema(pool, path: path)
        return pool
    }
}
