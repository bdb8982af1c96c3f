import Foundation
import HealthProbeArchive
import HealthProbeProtocol
import NIOPosix

/// Serializes applies per chain (each chain in sequence order) while
/// different chains apply in parallel: one replica file each, nothing shared.
/// The blocking SQLite work runs on the queue's own threads, never on Swift's
/// cooperative threads, so connections keep being served meanwhile. There is
/// one thread more than the cores by default: an apply spends part of its time
/// waiting for its commit and its bundle file to reach the disk, and with only
/// as many threads as cores a core idled meanwhile while bundles waited
/// (docs/decisions/2026-11-24-apply-threads.md).
actor ApplyQueue {
    let store: ServerStore
    let pool: NIOThreadPool
    let replicas: ReplicaCache
    /// While other applies run or wait, a chain's checkpoint waits until its
    /// uncopied bundles reach this many bytes (its WAL stays about that size).
    let deferredCheckpointBytes: Int
    private var busy: Set<String> = []
    /// Applies running or waiting for their chain's turn.
    private var applying = 0
    /// Chains applied to since their page cache was last freed.
    private var unreleased: Set<String> = []
    /// Chains applied to since their last checkpoint, with the bytes of the bundles applied since.
    private var unchecked: [String: Int] = [:]
    private var waiting: [String: [CheckedContinuation<Void, Never>]] = [:]
    /// The apply threads, and the applies running while their bundle arrives: each holds a
    /// thread meanwhile, so at most all threads but one do (`beginArriving`).
    let threads: Int
    private var arriving = 0

    /// After applying a bundle of this many bytes or more the server returns the
    /// allocator's free memory to the system (a million-sample bundle left about
    /// 100 MB held in glibc's heaps otherwise).
    static let trimAfterBytes = 64 << 20

    init(store: ServerStore, keptReplicas: Int, threads: Int = ServerConfig.defaultApplyThreads, deferredCheckpointBytes: Int = 16 << 20) {
        self.store = store
        self.threads = max(1, threads)
        self.deferredCheckpointBytes = deferredCheckpointBytes
        replicas = ReplicaCache(capacity: keptReplicas)
        pool = NIOThreadPool(numberOfThreads: max(1, threads))
        pool.start()
    }

    deinit { pool.shutdownGracefully { _ in } }

    /// Stops the apply threads once the applies running on them end; applies not
    /// started yet fail (nothing of them is stored). Calling it again does nothing.
    nonisolated func shutdown() async {
        try? await pool.shutdownGracefully()
    }

    private func acquire(_ chain: String) async {
        guard busy.contains(chain) else { busy.insert(chain); return }
        await withCheckedContinuation { waiting[chain, default: []].append($0) }
    }

    private func release(_ chain: String, appliedBytes: Int? = nil) {
        if let appliedBytes {
            unreleased.insert(chain)
            unchecked[chain, default: 0] += appliedBytes
        }
        if var queue = waiting[chain], !queue.isEmpty {
            let next = queue.removeFirst()
            waiting[chain] = queue.isEmpty ? nil : queue
            next.resume()  // handed over: the chain stays busy
        } else {
            busy.remove(chain)
        }
    }

    /// An apply starts or ends (tests: one in flight).
    func began() { applying += 1 }
    func ended() { applying -= 1 }

    /// Frees the page cache of every replica applied to since the last call, and
    /// checkpoints them; the server calls it after sending acknowledgements.
    ///
    /// Copying the WAL is work no acknowledgement waits for: while other applies
    /// run or wait (many devices syncing at once), it is left for the first call
    /// that finds none, unless a chain's uncopied bundles passed
    /// `deferredCheckpointBytes`. Nothing is at risk meanwhile: every commit was
    /// synced to the WAL before its acknowledgement.
    nonisolated func checkpointApplied() async {
        let (release, checkpoint) = await takeWork()
        let replicas = self.replicas
        for chain in release {
            await acquire(chain)
            try? await pool.runIfActive { replicas.releaseMemory(chain) }
            await self.release(chain)
        }
        for chain in checkpoint {
            // Outside the chain's turn: the chain's next apply may run meanwhile.
            let checkpointed: Bool
            do {
                try await pool.runIfActive { try replicas.checkpoint(chain) }
                checkpointed = true
            } catch {
                checkpointed = false
            }
            if !checkpointed {
                await acquire(chain)
                replicas.evict(chain)
                await self.release(chain)
            }
            // A WAL file a large bundle grew is cut back a step per turn of the chain.
            while checkpointed {
                await acquire(chain)
                let more = (try? await pool.runIfActive { try replicas.cutWAL(chain) }) ?? false
                await self.release(chain)
                if !more { break }
            }
        }
    }

    /// The chains whose page cache to free, and those to checkpoint now: all
    /// applied to when no apply runs or waits, else those past the deferred bytes.
    private func takeWork() -> (release: Set<String>, checkpoint: [String]) {
        let release = unreleased
        unreleased = []
        let now = applying == 0 ? Array(unchecked.keys) : unchecked.filter { $0.value >= deferredCheckpointBytes }.map(\.key)
        for chain in now { unchecked[chain] = nil }
        return (release, now.sorted())
    }

    /// Runs `body` in `chain`'s turn if the chain holds no bundle; returns whether it ran.
    /// A refused first bundle undoes its chain's binding this way: never once another
    /// connection's bundle of the chain was applied, which binds it (the applies of a chain
    /// take the same turn, so none commits between the look and `body`).
    nonisolated func ifChainEmpty(_ chain: String, _ body: @escaping @Sendable () throws -> Void) async throws -> Bool {
        await acquire(chain)
        let ran: Result<Bool, any Error>
        do {
            ran = .success(try await pool.runIfActive { [self] in
                guard try status(chain).0 == 0 else { return false }
                try body()
                return true
            })
        } catch {
            ran = .failure(error)
        }
        await release(chain)
        return try ran.get()
    }

    /// A chain's last sequence and manifest hash: remembered from its last apply
    /// while its replica is kept, else read from the replica (a connection opened
    /// and its schema read for every sync session's `CHAIN_STATUS`).
    nonisolated func status(_ chain: String) throws -> (Int, String?) {
        if let last = replicas.lastApplied(chain) { return (last.sequence, last.manifestHash) }
        return try store.status(chain)
    }

    /// Chains applied to and not yet checkpointed (tests).
    func uncheckedChains() -> Set<String> { Set(unchecked.keys) }

    /// Whether a bundle may be applied while it arrives (then `endArriving` once it is):
    /// true while fewer than all apply threads but one are held that way.
    func beginArriving() -> Bool {
        guard arriving < threads - 1 else { return false }
        arriving += 1
        return true
    }
    func endArriving() { arriving -= 1 }

    /// Verifies and applies the bundle at `path` (of `chain`, `bytes` long) once no other apply of that chain runs.
    /// `sequence`, when given, is the one `BUNDLE_BEGIN` announced: the bundle's header must say it.
    /// `claim` runs in the chain's turn just before the commit of an applied bundle (what it throws refuses it).
    nonisolated func apply(chain: String, path: String, manifestHash: String, sequence: Int? = nil, bytes: Int, at now: Double,
                           claim: @escaping @Sendable () throws -> Void = {}) async throws -> BundleApplier.Outcome {
        let store = self.store
        return try await run(chain: chain, manifestHash: { manifestHash }, bytes: { bytes }) { replica in
            try store.apply(file: path, manifestHash: manifestHash, sequence: sequence, now: now, bundleBytes: bytes, replica: replica, claim: claim).outcome
        }
    }

    /// Verifies and applies a bundle of `chain` while it arrives (`lines`; its parts written
    /// to `path` meanwhile), once no other apply of that chain runs; see `ServerStore.apply(arriving:)`.
    /// `manifestHash` and `bytes` nil: a streamed bundle (the hash is the one its end declares).
    /// Call only after `beginArriving` returned true.
    nonisolated func apply(chain: String, arriving lines: ArrivingLines, header: BundleHeader, path: String, manifestHash: String?,
                           sequence: Int, bytes: Int?, at now: Double, claim: @escaping @Sendable () throws -> Void = {}) async throws -> BundleApplier.Outcome {
        let store = self.store
        // However the apply ends, or if it never starts (cancelled while it waited for its
        // turn or a thread), parts still arriving are not handed over: the connection's
        // hand-over never waits for an applier that is gone.
        defer { lines.queue.cancel() }
        return try await run(chain: chain, manifestHash: { manifestHash ?? (try? lines.declaredManifestHash()) }, bytes: { bytes ?? lines.bytesHanded }) { replica in
            try store.apply(arriving: lines.lines, header: header, file: path, manifestHash: manifestHash, manifestHashAtEnd: lines.declaredManifestHash,
                            sequence: sequence, now: now, bundleBytes: bytes, transferChecked: lines.checked, replica: replica, claim: claim)
        }
    }

    /// Runs `work` on an apply thread in the chain's turn, with the chain's kept replica.
    /// `manifestHash` and `bytes` are asked once the apply ended (a streamed bundle's are known only then).
    private nonisolated func run(chain: String, manifestHash: @escaping @Sendable () -> String?, bytes: @escaping @Sendable () -> Int,
                                 _ work: @escaping @Sendable (_ replica: @escaping (String) throws -> Archive) throws -> BundleApplier.Outcome) async throws -> BundleApplier.Outcome {
        await began()
        await acquire(chain)
        let replicas = self.replicas, store = self.store
        // A chain this apply creates is removed again if its first bundle is refused.
        let existed = FileManager.default.fileExists(atPath: store.replicaPath(chain))
        do {
            let outcome = try await pool.runIfActive {
                let outcome = try work { chain in try replicas.replica(chain) { try store.openReplica(chain) } }
                // A large bundle leaves the allocator holding its buffers; hand them back.
                if bytes() >= Self.trimAfterBytes { Heap.trim() }
                return outcome
            }
            // Only an applied bundle wrote to the WAL.
            if case .applied(_, let sequence) = outcome {
                // An applied bundle's hash is known (a stream's end was checked before the commit).
                if let manifestHash = manifestHash() { replicas.noteApplied(chain, sequence: sequence, manifestHash: manifestHash) } else { replicas.evict(chain) }
                await release(chain, appliedBytes: bytes())
            } else {
                await release(chain)
            }
            await ended()
            return outcome
        } catch {
            replicas.evict(chain)
            if !existed { store.discardChain(chain) }
            await release(chain)
            await ended()
            throw error
        }
    }
}
