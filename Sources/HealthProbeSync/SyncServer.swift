import Foundation
import GRDB
import HealthProbeArchive
import Logging
import NIOCore
import NIOPosix
import NIOSSL

/// Serves the sync protocol (Protocol/README.md) over TLS: authenticates each
/// connection's device, receives bundles into a quarantine file, verifies and
/// applies each in one transaction to its chain's replica (only chains that
/// device owns), and acknowledges only after the commit. Connections run in a
/// task group; bundles of one chain are applied one at a time, in order, and
/// different chains in parallel.
public struct SyncServer: Sendable {
    public let store: ServerStore
    public let registry: DeviceRegistry
    public let logger: Logger
    private let applier: ApplyQueue
    private let tls: NIOSSLContext
    private let throttle: SharedAuthThrottle
    private let now: @Sendable () -> Double
    /// Limits of Protocol/README.md section 6 (shorter in tests).
    public let helloTimeout: TimeAmount
    public let idleTimeout: TimeAmount
    /// Counters for the metrics endpoint.
    public let metrics: ServerMetrics

    /// A server for an initialized data directory (its TLS identity and registry).
    public init(store: ServerStore, logger: Logger = Archive.silentLogger, helloTimeout: TimeAmount = .seconds(10),
                idleTimeout: TimeAmount = .seconds(120), throttle: AuthThrottle = AuthThrottle(),
                metrics: ServerMetrics = ServerMetrics(), keptReplicas: Int = ServerConfig.defaultKeptReplicas,
                applyThreads: Int = ServerConfig.defaultApplyThreads, now: @escaping @Sendable () -> Double = { Date().timeIntervalSince1970 }) throws {
        try store.requireInitialized()
        self.store = store
        self.logger = logger
        self.helloTimeout = helloTimeout
        self.idleTimeout = idleTimeout
        self.now = now
        self.metrics = metrics
        registry = try store.registry()
        tls = try store.identity().serverContext()
        self.throttle = SharedAuthThrottle(throttle)
        applier = ApplyQueue(store: store, keptReplicas: keptReplicas, threads: applyThreads)
    }

    /// Binds and serves until cancelled. `onBound` gets the bound port. Once
    /// serving ends, the apply threads stop: applies still waiting for one are
    /// abandoned (nothing of them stored) and their connections get an error.
    public func run(host: String, port: Int, onBound: @Sendable (Int) -> Void = { _ in }) async throws {
        do {
            try await serve(host: host, port: port, onBound: onBound)
        } catch {
            await applier.shutdown()
            throw error
        }
        await applier.shutdown()
    }

    private func serve(host: String, port: Int, onBound: @Sendable (Int) -> Void) async throws {
        try store.requireInitialized()
        // One server per data directory; held until serving ends.
        let lock = try store.lockServing()
        defer { withExtendedLifetime(lock) {} }
        try FileManager.default.createDirectory(atPath: store.quarantineDirectory, withIntermediateDirectories: true)
        let swept = store.sweepQuarantine()
        if swept > 0 { logger.notice("removed bundles a stopped server left in quarantine", metadata: ["server.quarantine_files": "\(swept)"]) }
        try store.ensureReplicaTemplate()
        let (hello, idle, tls) = (helloTimeout, idleTimeout, tls)
        let server = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .bind(host: host, port: port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: tls))
                    try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(SyncConnectionDecoder()))
                    try channel.pipeline.syncOperations.addHandler(MessageToByteHandler(SyncConnectionEncoder()))
                    try channel.pipeline.syncOperations.addHandler(SyncTimeoutHandler(hello: hello, idle: idle))
                    return try NIOAsyncChannel<SyncInbound, SyncOutbound>(wrappingChannelSynchronously: channel)
                }
            }
        onBound(server.channel.localAddress?.port ?? port)
        logger.info("sync server listening", metadata: ["server.port": "\(server.channel.localAddress?.port ?? port)"])
        try await withThrowingDiscardingTaskGroup { group in
            try await server.executeThenClose { connections in
                for try await connection in connections {
                    let peer = connection.channel.remoteAddress?.ipAddress ?? "unknown"
                    group.addTask { await self.handle(connection, peer: peer) }
                }
            }
        }
    }

    /// One connection: each message goes through `ServerSessionStateMachine`;
    /// this carries out the actions it returns.
    func handle(_ connection: NIOAsyncChannel<SyncInbound, SyncOutbound>, peer: String) async {
        var quarantine: String?
        defer { if let q = quarantine { try? FileManager.default.removeItem(atPath: q) } }
        metrics.connectionOpened()
        defer { metrics.connectionClosed() }
        do {
            try await connection.executeThenClose { inbound, outbound in
                var messages = inbound.makeAsyncIterator()
                var machine = ServerSessionStateMachine()
                var receiving: Receiving?
                var identity: DeviceRegistry.Identity?
                var clockOffset: Double?
                do {
                    while let message = try await messages.next() {
                        switch machine.received(message) {
                        case .none:
                            return
                        case .sendHello:
                            try await outbound.write(.hello(SyncHello()))
                        case .authenticate(let frame):
                            // Unauthenticated peers get nothing but an error, slower each time.
                            do {
                                let (id, reply, offset) = try await offload { try authenticate(frame) }
                                identity = id
                                clockOffset = offset
                                machine.authenticated()
                                await throttle.success(peer: peer)
                                metrics.authentication(ok: true)
                                logger.info("device authenticated", metadata: ["sync.device": "\(id.name)"])
                                try await outbound.write(.frame(reply))
                            } catch {
                                machine.closed()
                                try await refuseSlowly(peer: peer)
                                throw error
                            }
                        case .refuse(let error):
                            try await refuseSlowly(peer: peer)
                            throw error
                        case .fail(let error):
                            throw error
                        case .sendPong:
                            try await outbound.write(.frame(SyncFrame(kind: .pong, payload: ByteBuffer())))
                        case .chainStatus(let frame):
                            let device = identity!, offset = clockOffset
                            let chain = try ChainStatusRequest(frame).deviceChainHash
                            let (seq, hash): (Int, String?)
                            do {
                                (seq, hash) = try await offload {
                                    try requireActive(device)
                                    try Self.mapAuth { try registry.authorizeRead(device, chain: chain) }
                                    let status = try applier.status(chain)
                                    try registry.recordSync(chain: chain, now: now(), clockOffset: offset)
                                    return status
                                }
                            } catch let e as SyncProtocolError where e.code == .forbidden {
                                // Asking for another device's chain is recorded like sending a bundle of it.
                                await refused(e, what: "chain status", chain: chain, sequence: nil, device: device, detail: "CHAIN_STATUS_REQUEST: " + e.message)
                                throw e
                            }
                            try await outbound.write(.frame(.json(.chainStatus, .object([
                                "device_chain_hash": .string(chain), "last_sequence": .int(seq), "last_manifest_hash": .optional(hash)]))))
                        case .household(let frame):
                            let device = identity!
                            let request = try HouseholdRequest(frame)
                            let (type, from, to) = (request.type, request.from, request.to)
                            let json = try await offload {
                                try requireActive(device)
                                return try HouseholdSummary.wireJSON(try HouseholdSummary.build(store, registry: registry, type: type, from: from, to: to))
                            }
                            try await outbound.write(.frame(SyncFrame(kind: .household, payload: ByteBuffer(bytes: json))))
                        case .beginBundle(let frame):
                            let device = identity!
                            try await offload { try requireActive(device) }
                            let r = try Receiving(begin: try BundleBegin(frame), directory: store.quarantineDirectory)
                            quarantine = r.path
                            receiving = r
                        case .receivePart(let frame):
                            // Inflating and writing a part is CPU and file work: off the cooperative threads.
                            let r = receiving!
                            try await offload { try r.part(frame.payload) }
                            metrics.received(bytes: frame.payload.readableBytes)
                        case .endBundle(let frame):
                            let r = receiving!
                            receiving = nil
                            try r.end(try BundleEnd(frame))
                            let reply = await finish(r, device: identity!, clockOffset: clockOffset)
                            try? FileManager.default.removeItem(atPath: r.path)
                            quarantine = nil
                            try await outbound.write(.frame(reply))
                            machine.bundleFinished()
                            await applier.checkpointApplied()
                        }
                    }
                } catch {
                    let e = Self.protocolError(error)
                    try? await outbound.write(.frame(.error(e)))
                }
            }
        } catch {
            logger.debug("connection ended", metadata: ["sync.error": "\(error)"])
        }
    }

    /// Counts a refused authentication and waits as the throttle says before the error is sent.
    func refuseSlowly(peer: String) async throws {
        metrics.authentication(ok: false)
        let delay = await throttle.failure(peer: peer, now: now())
        logger.warning("authentication refused", metadata: ["sync.peer": "\(peer)", "sync.delay_seconds": "\(delay)"])
        try await Task.sleep(for: .milliseconds(Int(delay * 1000)))
    }

    /// AUTH or ENROLL: the identity, the AUTH_OK reply, and the device clock's offset.
    func authenticate(_ frame: SyncFrame) throws -> (DeviceRegistry.Identity, SyncFrame, Double?) {
        guard frame.kind == .auth || frame.kind == .enroll else {
            throw SyncProtocolError(.unauthorized, "authenticate first: the first frame after the hello must be AUTH or ENROLL")
        }
        let t = now()
        let identity: DeviceRegistry.Identity
        let clientTime: Double
        var fields: [String: JSONValue] = ["server_time": .string(CanonicalDate.string(t))]
        if frame.kind == .enroll {
            let request = try EnrollRequest(frame)
            let (id, credential) = try Self.mapAuth { try registry.redeem(name: request.deviceName, secret: request.enrollmentSecret, now: t) }
            (identity, clientTime) = (id, request.clientTime)
            fields["device_name"] = .string(request.deviceName)
            fields["credential"] = .string(credential)
        } else {
            let request = try AuthRequest(frame)
            identity = try Self.mapAuth { try registry.authenticate(name: request.deviceName, credential: request.credential) }
            clientTime = request.clientTime
            fields["device_name"] = .string(request.deviceName)
        }
        return (identity, try .json(.authOK, .object(fields)), clientTime - t)
    }

    func requireActive(_ device: DeviceRegistry.Identity) throws {
        guard try registry.isActive(device) else { throw SyncProtocolError(.unauthorized, "this device has been revoked") }
    }

    static func mapAuth<T>(_ body: () throws -> T) throws -> T {
        do { return try body() } catch let e as DeviceRegistry.AuthError {
            throw SyncProtocolError(e.code == .forbidden ? .forbidden : .unauthorized, e.message)
        }
    }

    /// Runs blocking work (the registry's SQLite reads and synced commits, file
    /// reads) on NIO's blocking-I/O threads, never on Swift's cooperative threads:
    /// with many sessions at once, those waiting there for the registry's commits
    /// left no thread to serve the other sessions' frames and acknowledgements.
    func offload<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await NIOThreadPool.singleton.runIfActive(body)
    }

    /// Authorizes, verifies and applies a received bundle; the reply to send.
    func finish(_ r: Receiving, device: DeviceRegistry.Identity, clockOffset: Double?) async -> SyncFrame {
        var chain: String?
        var bound = false
        let path = r.path
        do {
            let c = try await offload { try ServerStore.peekChain(file: path) }
            chain = c
            bound = try await offload {
                try requireActive(device)
                return try Self.mapAuth { try registry.claim(device, chain: c, now: now()) }
            }
            let started = ContinuousClock.now
            let outcome = try await applier.apply(chain: c, path: r.path, manifestHash: r.manifestHash, bytes: r.uncompressedSize, at: now())
            bound = false  // applied: the binding stands, whatever fails after this
            metrics.bundle(outcome: outcome, seconds: (ContinuousClock.now - started).seconds)
            try await offload { try registry.recordSync(chain: c, now: now(), clockOffset: clockOffset) }
            let status: String
            switch outcome {
            case .applied: status = "applied"
            case .alreadyApplied: status = "already_applied"
            }
            return try .json(.bundleAck, .object(["sequence": .int(r.sequence), "manifest_hash": .string(r.manifestHash), "status": .string(status)]))
        } catch {
            let e = Self.protocolError(error)
            if bound, let c = chain {
                // This bundle bound the chain; refused, it binds nothing.
                _ = try? await offload { try registry.release(device, chain: c) }
            }
            await refused(e, what: "bundle", chain: chain, sequence: r.sequence, device: device, detail: e.message)
            return .error(e, sequence: r.sequence)
        }
    }

    /// Counts and logs a refused request, and records it for the administrator when it
    /// is one they must see: divergence, another device's chain, an invalid bundle.
    func refused(_ e: SyncProtocolError, what: String, chain: String?, sequence: Int?, device: DeviceRegistry.Identity, detail: String) async {
        metrics.refused(code: e.code.rawValue)
        var metadata: Logger.Metadata = ["sync.error": "\(e.code.rawValue)", "sync.device": "\(device.name)"]
        if let sequence { metadata["sync.sequence"] = "\(sequence)" }
        logger.warning("\(what) refused", metadata: metadata)
        guard [.divergence, .forbidden, .bundleInvalid].contains(e.code) else { return }
        _ = try? await offload { try registry.recordEvent(kind: e.code.rawValue, chain: chain, sequence: sequence, device: device.name, detail: detail, now: now()) }
    }

    static func protocolError(_ error: any Error) -> SyncProtocolError {
        if let e = error as? SyncProtocolError { return e }
        if let e = error as? BundleError { return SyncProtocolError(.bundleInvalid, "\(e.code.rawValue): \(e.message)") }
        if let e = error as? BundleApplier.ApplyError {
            switch e.code {
            case .divergence: return SyncProtocolError(.divergence, e.message)
            case .outOfOrder: return SyncProtocolError(.outOfOrder, e.message)
            case .unresolved: return SyncProtocolError(.bundleInvalid, e.message)
            }
        }
        return SyncProtocolError(.storage, "the server could not read or write its data; try again later")
    }

    /// A bundle being received into a quarantine file (used by one session at a
    /// time; a reference, so that its buffer moves to the thread inflating a part
    /// without being copied).
    final class Receiving: @unchecked Sendable {
        let sequence: Int
        let manifestHash: String
        let parts: Int
        let uncompressedSize: Int
        let itemCount: Int
        let path: String
        /// Lines received so far (newlines, plus an unterminated last line at the end).
        var lines = 0
        var endsWithNewline = true
        var nextPart = 0
        var received = 0
        let handle: FileHandle
        /// Each part is inflated into this one buffer (its capacity reused).
        var inflated: [UInt8] = []

        init(begin: BundleBegin, directory: String) throws {
            sequence = begin.sequence
            manifestHash = begin.manifestHash
            parts = begin.parts
            itemCount = begin.itemCount
            uncompressedSize = begin.uncompressedSize
            path = directory + "/\(UUID().uuidString).jsonl"
            guard FileManager.default.createFile(atPath: path, contents: nil), let h = FileHandle(forWritingAtPath: path) else {
                throw SyncProtocolError(.storage, "the server cannot write its quarantine file")
            }
            handle = h
        }

        func part(_ payload: ByteBuffer) throws {
            var p = payload
            guard let index: UInt32 = p.readInteger(endianness: .big), let size: UInt32 = p.readInteger(endianness: .big) else {
                throw SyncProtocolError(.malformedFrame, "a BUNDLE_PART frame is shorter than its header")
            }
            guard Int(index) == nextPart, nextPart < parts else {
                throw SyncProtocolError(.malformedFrame, "BUNDLE_PART \(index) arrived; expected part \(nextPart) of \(parts)")
            }
            try p.withUnsafeReadableBytes { try BundlePartCodec.inflate($0, declaredSize: Int(size), into: &inflated) }
            received += inflated.count
            lines += inflated.withUnsafeBufferPointer { Self.newlines(in: $0) }
            if let last = inflated.last { endsWithNewline = last == 0x0A }
            guard received <= uncompressedSize else {
                throw SyncProtocolError(.inflateLimit, "the parts hold more than the \(uncompressedSize) bytes BUNDLE_BEGIN declared")
            }
            do { try handle.write(contentsOf: inflated) } catch {
                throw SyncProtocolError(.storage, "the server cannot write its quarantine file (disk full?)")
            }
            nextPart += 1
        }

        func end(_ e: BundleEnd) throws {
            try? handle.close()
            inflated = []
            guard e.sequence == sequence, e.manifestHash == manifestHash else {
                throw SyncProtocolError(.malformedFrame, "BUNDLE_END (sequence \(e.sequence)) does not match its BUNDLE_BEGIN (sequence \(sequence))")
            }
            guard nextPart == parts, received == uncompressedSize else {
                throw SyncProtocolError(.malformedFrame, "the bundle ended after \(nextPart) of \(parts) parts and \(received) of \(uncompressedSize) bytes")
            }
            // Header, items, trailer: one line each.
            let total = lines + (endsWithNewline ? 0 : 1)
            guard total == itemCount + 2 else {
                throw SyncProtocolError(.malformedFrame, "BUNDLE_BEGIN declared \(itemCount) items; the bundle holds \(max(total - 2, 0)) (\(total) lines)")
            }
        }

        /// How many LF bytes `bytes` holds.
        static func newlines(in bytes: UnsafeBufferPointer<UInt8>) -> Int {
            guard var p = bytes.baseAddress.map(UnsafeRawPointer.init) else { return 0 }
            let end = p + bytes.count
            var n = 0
            while p < end, let hit = memchr(p, 0x0A, end - p) {
                n += 1
                p = UnsafeRawPointer(hit) + 1
            }
            return n
        }
    }
}

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

    /// After applying a bundle of this many bytes or more the server returns the
    /// allocator's free memory to the system (a million-sample bundle left about
    /// 100 MB held in glibc's heaps otherwise).
    static let trimAfterBytes = 64 << 20

    init(store: ServerStore, keptReplicas: Int, threads: Int = ServerConfig.defaultApplyThreads, deferredCheckpointBytes: Int = 16 << 20) {
        self.store = store
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

    /// A chain's last sequence and manifest hash: remembered from its last apply
    /// while its replica is kept, else read from the replica (a connection opened
    /// and its schema read for every sync session's `CHAIN_STATUS`).
    nonisolated func status(_ chain: String) throws -> (Int, String?) {
        if let last = replicas.lastApplied(chain) { return (last.sequence, last.manifestHash) }
        return try store.status(chain)
    }

    /// Chains applied to and not yet checkpointed (tests).
    func uncheckedChains() -> Set<String> { Set(unchecked.keys) }

    /// Verifies and applies the bundle at `path` (of `chain`, `bytes` long) once no other apply of that chain runs.
    nonisolated func apply(chain: String, path: String, manifestHash: String, bytes: Int, at now: Double) async throws -> BundleApplier.Outcome {
        await began()
        await acquire(chain)
        let replicas = self.replicas, store = self.store
        // A chain this apply creates is removed again if its first bundle is refused.
        let existed = FileManager.default.fileExists(atPath: store.replicaPath(chain))
        do {
            let outcome = try await pool.runIfActive {
                let outcome = try store.apply(file: path, manifestHash: manifestHash, now: now) { chain in
                    try replicas.replica(chain) { try store.openReplica(chain) }
                }.outcome
                // A large bundle leaves the allocator holding its buffers; hand them back.
                if bytes >= Self.trimAfterBytes { Heap.trim() }
                return outcome
            }
            // Only an applied bundle wrote to the WAL.
            if case .applied(_, let sequence) = outcome {
                replicas.noteApplied(chain, sequence: sequence, manifestHash: manifestHash)
                await release(chain, appliedBytes: bytes)
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
