import Foundation
import GRDB
import HealthProbeArchive
import HealthProbeProtocol
import HealthProbeCanonical
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
    /// Whether accepted bundles are queued for object storage (`OffsiteService` uploads them).
    public let offsiteUploads: Bool
    /// A bundle of at least this many parts is verified and applied while its parts arrive
    /// (when an apply thread can be spared), rather than once `BUNDLE_END` came.
    public let arrivingParts: Int
    /// How long such an apply waits for the next part (and the connection for room to hand
    /// one over); past it, it stops and the bundle is applied from its quarantine file once
    /// `BUNDLE_END` came, as a smaller one is. It stops too once the bundle has taken longer
    /// than `arrivingGrace` and the bytes that arrived (and a part more) at `arrivingMinimumRate`.
    public let arrivingPartWait: Duration
    /// Bundle bytes (inflated) a second an apply while the parts arrive waits for, on average.
    public let arrivingMinimumRate: Double
    public let arrivingGrace: Duration
    /// A part is handed to its apply in pieces of this many bytes, at most four waiting.
    public let arrivingPiece: Int
    /// The hello versions this server speaks (an earlier build's: tests of clients that fall back).
    public let versions: ClosedRange<UInt16>
    /// Bytes of the data directory's file system kept free: a bundle is refused (`storage`,
    /// retryable) when it opens, or a part arrives, with less free (`disk_reserve_mib`), so
    /// that one device's large upload never leaves the other chains' commits without room.
    public let diskReserveBytes: Int64
    /// How free space is read (`ServerConditions.fileSystemSpace`; tests inject a disk that fills).
    let space: @Sendable (String) -> ServerConditions.Space?

    /// A server for an initialized data directory (its TLS identity and registry).
    public init(store: ServerStore, logger: Logger = Archive.silentLogger, helloTimeout: TimeAmount = .seconds(10),
                idleTimeout: TimeAmount = .seconds(120), throttle: AuthThrottle = AuthThrottle(),
                metrics: ServerMetrics = ServerMetrics(), keptReplicas: Int = ServerConfig.defaultKeptReplicas,
                applyThreads: Int = ServerConfig.defaultApplyThreads, offsiteUploads: Bool = false,
                arrivingParts: Int = 2, arrivingPartWait: Duration = .seconds(30), arrivingMinimumRate: Double = 1_048_576,
                arrivingGrace: Duration = .seconds(60), arrivingPiece: Int = 1 << 20, versions: ClosedRange<UInt16> = SyncHello.versions,
                diskReserveBytes: Int64 = ServerConfig.defaultDiskReserveMiB << 20,
                space: @escaping @Sendable (String) -> ServerConditions.Space? = ServerConditions.fileSystemSpace,
                now: @escaping @Sendable () -> Double = { Date().timeIntervalSince1970 }) throws {
        try store.requireInitialized()
        self.store = store
        self.logger = logger
        self.helloTimeout = helloTimeout
        self.idleTimeout = idleTimeout
        self.now = now
        self.metrics = metrics
        self.offsiteUploads = offsiteUploads
        self.arrivingParts = max(1, arrivingParts)
        self.arrivingPartWait = arrivingPartWait
        self.arrivingMinimumRate = max(arrivingMinimumRate, 1)
        self.arrivingGrace = arrivingGrace
        self.arrivingPiece = max(arrivingPiece, 1)
        self.versions = versions
        self.diskReserveBytes = max(diskReserveBytes, 0)
        self.space = space
        registry = try store.registry()
        tls = try store.identity().serverContext()
        self.throttle = SharedAuthThrottle(throttle)
        applier = ApplyQueue(store: store, keptReplicas: keptReplicas, threads: applyThreads)
    }

    /// Binds and serves until cancelled. `onBound` gets the bound port. Once
    /// serving ends, the apply threads stop: applies still waiting for one are
    /// abandoned (nothing of them stored) and their connections get an error.
    /// `lock`: the serving lock when the caller took it already (`hp-server serve` takes it
    /// before any of its services starts, so none of them can take it first); else `run` takes it.
    public func run(host: String, port: Int, lock: FileLock? = nil, onBound: @Sendable (Int) -> Void = { _ in }) async throws {
        do {
            try await serve(host: host, port: port, lock: lock, onBound: onBound)
        } catch {
            await applier.shutdown()
            throw error
        }
        await applier.shutdown()
    }

    private func serve(host: String, port: Int, lock held: FileLock?, onBound: @Sendable (Int) -> Void) async throws {
        try store.requireInitialized()
        if let delay = Failpoints.listenDelay { try await Task.sleep(for: .seconds(delay)) }
        // One server per data directory; held until serving ends.
        let lock = try held ?? store.lockServing()
        defer { withExtendedLifetime(lock) {} }
        try FileManager.default.createDirectory(atPath: store.quarantineDirectory, withIntermediateDirectories: true)
        let swept = store.sweepQuarantine()
        if swept > 0 { logger.notice("removed bundles a stopped server left in quarantine", metadata: ["server.quarantine_files": "\(swept)"]) }
        try store.ensureReplicaTemplate()
        // Every replica at this build's schema before anything reads or applies to one.
        let migrated = try store.migrateReplicas { chain in
            logger.notice("migrating a replica to this build's schema", metadata: ["server.chain": "\(chain.prefix(16))"])
        }
        if migrated > 0 { logger.notice("replicas migrated", metadata: ["server.replicas": "\(migrated)"]) }
        let (hello, idle, tls, versions) = (helloTimeout, idleTimeout, tls, versions)
        let server = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .bind(host: host, port: port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: tls))
                    try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(SyncConnectionDecoder(versions: versions)))
                    try channel.pipeline.syncOperations.addHandler(MessageToByteHandler(SyncConnectionEncoder()))
                    try channel.pipeline.syncOperations.addHandler(SyncTimeoutHandler(hello: hello, idle: idle))
                    let arrivals = FrameArrivals()
                    try channel.pipeline.syncOperations.addHandler(FrameArrivals.Counter(arrivals))
                    // At most two frames (each up to 16 MiB) wait to be read: NIO's default of ten let a
                    // connection whose bundle is being applied hold about 50 MB more (docs/restore-measurements.md).
                    let waiting = NIOAsyncChannel<SyncInbound, SyncOutbound>.Configuration(backPressureStrategy: .init(lowWatermark: 1, highWatermark: 2))
                    return Accepted(channel: try NIOAsyncChannel<SyncInbound, SyncOutbound>(wrappingChannelSynchronously: channel, configuration: waiting),
                                    arrivals: arrivals)
                }
            }
        onBound(server.channel.localAddress?.port ?? port)
        logger.info("sync server listening", metadata: ["server.port": "\(server.channel.localAddress?.port ?? port)"])
        try await withThrowingDiscardingTaskGroup { group in
            try await server.executeThenClose { connections in
                for try await accepted in connections {
                    let peer = accepted.channel.channel.remoteAddress?.ipAddress ?? "unknown"
                    group.addTask { await self.handle(accepted.channel, arrivals: accepted.arrivals, peer: peer) }
                }
            }
        }
    }

    /// An accepted connection, and what counts the messages arriving on it.
    struct Accepted: Sendable {
        let channel: NIOAsyncChannel<SyncInbound, SyncOutbound>
        let arrivals: FrameArrivals
    }

    /// One connection: each message goes through `ServerSessionStateMachine`,
    /// which holds the session; this carries out the actions it returns.
    func handle(_ connection: NIOAsyncChannel<SyncInbound, SyncOutbound>, arrivals: FrameArrivals, peer: String) async {
        metrics.connectionOpened()
        defer { metrics.connectionClosed() }
        var machine = ServerSessionStateMachine()
        // Chains whose status this connection asked for, and whether anything was refused:
        // a connection that ends cleanly with nothing refused is a good sync of those chains.
        var asked: Set<String> = []
        var refusedAny = false
        var endedCleanly = false
        var clockOffset: Double?
        /// A bundle being applied while it arrived when the connection ended.
        var abandoned: ArrivingApply?
        do {
            try await connection.executeThenClose { inbound, outbound in
                var messages = inbound.makeAsyncIterator()
                // Messages read so far; `arrivals` counts those that arrived.
                var read = 0
                // The apply of a bundle while it arrives runs beside the messages (one at a time).
                try await withThrowingTaskGroup(of: ArrivingApply.Ended.self) { applies in
                var arriving: ArrivingApply?
                // However the messages end, an apply still waiting for parts gets no more.
                defer {
                    if let a = arriving {
                        a.lines.finish(failure: ArrivingLines.Incomplete())
                        abandoned = a
                    }
                }
                do {
                    while true {
                        let message: SyncInbound
                        do {
                            guard let next = try await messages.next() else { break }
                            message = next
                        } catch let e as SyncProtocolError {
                            // What arrived could not be decoded (a length over the maximum or of 0, an
                            // unknown type): the session's state says how that is answered.
                            switch machine.undecodable(e) {
                            case .refuse(let error):
                                try await refuseSlowly(peer: peer)
                                throw error
                            case .fail(let error): throw error
                            default: return
                            }
                        }
                        read += 1
                        switch machine.received(message) {
                        case .none:
                            return
                        case .sendHello(let version):
                            try await outbound.write(.hello(SyncHello(version: version)))
                        case .authenticate(let credentials):
                            // Unauthenticated peers get nothing but an error, slower each time.
                            let session: ServerSessionStateMachine.Session, reply: SyncFrame
                            do {
                                (session, reply) = try await offload { try authenticate(credentials) }
                            } catch {
                                machine.closed()
                                try await refuseSlowly(peer: peer)
                                throw error
                            }
                            await throttle.success(peer: peer)
                            metrics.authentication(ok: true)
                            logger.info("device authenticated", metadata: ["sync.device": "\(session.identity.name)"])
                            // Frames may follow AUTH at once: they are read once it is accepted.
                            machine.authenticated(session)
                            clockOffset = session.clockOffset
                            try await outbound.write(.frame(reply))
                        case .refuse(let error):
                            try await refuseSlowly(peer: peer)
                            throw error
                        case .fail(let error):
                            throw error
                        case .sendPong:
                            try await outbound.write(.frame(SyncFrame(kind: .pong, payload: ByteBuffer())))
                        case .chainStatus(let session, let request):
                            try await outbound.write(.frame(try await chainStatus(request.deviceChainHash, session: session)))
                            asked.insert(request.deviceChainHash)
                        case .household(let session, let request):
                            let device = session.identity
                            let (type, from, to) = (request.type, request.from, request.to)
                            let json = try await offload {
                                try requireActive(device)
                                // The people model's rule: the chains this device's person may read, no others.
                                let readable = try registry.readableChains(device: device, among: try store.chains())
                                return try HouseholdSummary.wireJSON(try HouseholdSummary.build(store, registry: registry, only: readable, type: type, from: from, to: to))
                            }
                            try await outbound.write(.frame(SyncFrame(kind: .household, payload: ByteBuffer(bytes: json))))
                        case .restore(let session, let request):
                            try await restore(request, session: session, version: machine.version, outbound: outbound)
                        case .openBundle(let session, _):
                            let device = session.identity, directory = store.quarantineDirectory
                            let file = try await offload {
                                try requireActive(device)
                                try requireDiskRoom()
                                return try QuarantineFile(directory: directory)
                            }
                            machine.bundleOpened(file)
                        case .writePart(let file, let part):
                            // The first part of a large bundle may start its apply (with its header).
                            let handOver = arriving.map { !$0.lines.stopped } ?? (part.index == 0 && appliesWhileArriving(machine))
                            // Inflating and writing a part is CPU and file work: off the cooperative threads.
                            let spares = arriving?.lines
                            let written = try await offload {
                                try requireDiskRoom()
                                return try file.write(part, pieces: handOver ? arrivingPiece : nil, spare: { spares?.spareBuffer() ?? [] })
                            }
                            if let tooLong = machine.partWritten(newlines: written.newlines, lastByte: written.lastByte, tail: written.tail) { throw tooLong }
                            let pieces = written.pieces
                            metrics.received(bytes: part.compressed.readableBytes + 8)
                            if arriving == nil, handOver, case .receiving(let session, let transfer) = machine.state {
                                arriving = await startArriving(transfer, session: session, in: &applies)
                            }
                            if let a = arriving, !pieces.isEmpty {
                                // Waits while the applier is behind (the usual case), so on a thread of its own rather
                                // than one of NIO's pool, which every session's short blocking calls share; throws once
                                // the applier stopped (its outcome says why).
                                _ = try? await StageThread.run(name: "healthprobe.sync.hand-over") { for piece in pieces { try a.lines.put(piece) } }
                            }
                        case .applyBundle(let session, let transfer, let declared):
                            transfer.file.finish()
                            var arrived: ArrivingApply.Ended?
                            if let a = arriving {
                                // The chain is claimed (and the device checked) now, as for a bundle applied
                                // from its file: only then may the apply commit; a refusal stops it instead.
                                let claim = await claimForCommit(a, session: session)
                                a.lines.finish(failure: claim.failure, manifestHash: declared.manifestHash)
                                arriving = nil
                                guard let ended = try await applies.next() else {
                                    throw SyncProtocolError(.storage, "the server lost track of a bundle's apply; send it again")
                                }
                                arrived = ended.claimed(claim)
                            }
                            let reply = await finish(transfer, declared: declared, session: session, arrived: arrived)
                            if reply.kind == .error { refusedAny = true }
                            transfer.file.discard()
                            // A frame that arrived before the reply was sent (the client did not wait).
                            let early = arrivals.arrived > read
                            try await outbound.write(.frame(reply))
                            if early { try await answerEarly(&messages, &read, &machine) }
                            machine.bundleFinished()
                            await applier.checkpointApplied()
                        }
                    }
                    endedCleanly = true
                } catch {
                    let e = Self.protocolError(error)
                    try? await outbound.write(.frame(.error(e)))
                }
                }
            }
        } catch {
            logger.debug("connection ended", metadata: ["sync.error": "\(error)"])
        }
        // Its apply has ended without a commit (the group waited for it); it bound no chain.
        if abandoned != nil { metrics.arrivingApply(ended: "abandoned") }
        // A bundle still being received when the connection ended is never applied.
        let open = machine.closed()
        open?.discard()
        if endedCleanly, open == nil, !refusedAny, !asked.isEmpty {
            let offset = clockOffset, chains = asked
            _ = try? await offload { for c in chains { try registry.recordSync(chain: c, now: now(), clockOffset: offset) } }
        }
    }

    /// Reads the message that arrived while the server was still answering and hands
    /// it to the session in that state, which refuses it (`unexpected_message`).
    func answerEarly(_ messages: inout NIOAsyncChannelInboundStream<SyncInbound>.AsyncIterator, _ read: inout Int,
                     _ machine: inout ServerSessionStateMachine) async throws {
        guard let message = try await messages.next() else { return }
        read += 1
        if case .fail(let error) = machine.received(message) { throw error }
    }

    /// `CHAIN_STATUS`: the chain's last sequence and manifest hash, if the session may read it.
    func chainStatus(_ chain: String, session: ServerSessionStateMachine.Session) async throws -> SyncFrame {
        let device = session.identity, offset = session.clockOffset
        let (seq, hash): (Int, String?)
        do {
            (seq, hash) = try await offload {
                try requireActive(device)
                try Self.mapAuth { try registry.authorizeRead(device, chain: chain) }
                let status = try applier.status(chain)
                // Contact, not yet a sync: it counts once the connection ends with nothing refused.
                try registry.recordContact(chain: chain, now: now(), clockOffset: offset)
                return status
            }
        } catch let e as SyncProtocolError where e.code == .forbidden {
            // Asking for another device's chain is recorded like sending a bundle of it.
            await refused(e, what: "chain status", chain: chain, sequence: nil, device: device, detail: "CHAIN_STATUS_REQUEST: " + e.message)
            throw e
        }
        return try .json(.chainStatus, .object([
            "device_chain_hash": .string(chain), "last_sequence": .int(seq), "last_manifest_hash": .optional(hash)]))
    }

    /// `RESTORE_REQUEST`: the kept bundle at the requested sequence of a chain this device
    /// owns, as `RESTORE_BUNDLE` (with the replica's chain-state digest after it) and its
    /// `RESTORE_PART`s, read one part at a time (`RestoreParts`). In a session of `version` 3
    /// or later, as `RESTORE_STREAM`, the parts, and `RESTORE_STATE`: the digest is computed
    /// while the parts are sent. A bundle of format 2 goes only in a session of version 4 or later.
    func restore(_ request: RestoreRequest, session: ServerSessionStateMachine.Session, version: UInt16,
                 outbound: NIOAsyncChannelOutboundWriter<SyncOutbound>) async throws {
        let stateAfterParts = version >= SyncHello.streamVersion
        let device = session.identity, chain = request.deviceChainHash, sequence = request.sequence
        let path: String
        do {
            path = try await offload {
                try requireActive(device)
                try Self.mapAuth { try registry.authorizeRestore(device, chain: chain) }
                guard let path = store.storedBundlePath(chain, sequence: sequence) else { throw Self.noBundle(chain, sequence) }
                return path
            }
        } catch let e as SyncProtocolError where e.code == .forbidden {
            await refused(e, what: "restore", chain: chain, sequence: sequence, device: device, detail: "RESTORE_REQUEST: " + e.message)
            throw e
        }
        // The file's first pass and the chain state after the bundle (a query of the replica), side by side.
        async let scanned = offload { try RestoreParts(path: path) }
        guard let logged = try await offload({ try store.readReplica(chain, { try RestorePoint.at($0, sequence: sequence) }) }) else {
            throw Self.noBundle(chain, sequence)
        }
        guard logged.bundleFormat < 2 || version >= SyncHello.bundleFormatVersion else {
            throw SyncProtocolError(.protocolVersion, "bundle \(sequence) of this chain is bundle format 2, which a restore carries only with sync protocol version \(SyncHello.bundleFormatVersion) (this connection's hello said \(version)); upgrade hp-node")
        }
        let observation = logged.observationID
        async let state = offload { try store.readReplica(chain, { try ChainStateDigest.compute($0, observationID: observation) }) }
        let parts = try await scanned
        guard parts.lines == logged.itemCount + 2 else {
            throw RestoreParts.damaged(path, "it holds \(parts.lines) lines where the replica's log says \(logged.itemCount + 2)")
        }
        let declared = BundleBegin(sequence: sequence, manifestHash: logged.manifestHash, parts: parts.parts, itemCount: logged.itemCount,
                                   uncompressedSize: parts.size)
        if stateAfterParts {
            // Version 3: the state follows the parts, computed while they are sent.
            try await outbound.write(.frame(try declared.frame(.restoreStream)))
        } else {
            let after = try await state
            try await outbound.write(.frame(try RestoreBundle.frame(declared, chainStateDigest: after.digest, visibleCount: after.visibleCount)))
        }
        while let part = try await offload({ try parts.next() }) {
            try await outbound.write(.frame(SyncFrame(kind: .restorePart, payload: Self.partPayload(part))))
        }
        if stateAfterParts {
            let after = try await state
            try await outbound.write(.frame(try RestoreState.frame(sequence: sequence, chainStateDigest: after.digest, visibleCount: after.visibleCount)))
        }
        logger.info("bundle sent for a restore", metadata: ["sync.device": "\(device.name)", "sync.sequence": "\(sequence)"])
    }

    /// A `RESTORE_PART` payload: index, size before deflating, the zlib data.
    static func partPayload(_ part: (index: Int, size: Int, zlib: [UInt8])) -> ByteBuffer {
        var payload = ByteBuffer()
        payload.reserveCapacity(8 + part.zlib.count)
        payload.writeInteger(UInt32(part.index), endianness: .big)
        payload.writeInteger(UInt32(part.size), endianness: .big)
        payload.writeBytes(part.zlib)
        return payload
    }

    /// `not_found` for a bundle this server does not hold.
    static func noBundle(_ chain: String, _ sequence: Int) -> SyncProtocolError {
        SyncProtocolError(.notFound, "this server holds no bundle \(sequence) of chain \(chain.prefix(16)); ask CHAIN_STATUS for its last sequence")
    }

    /// Counts a refused authentication and waits as the throttle says before the error is sent.
    func refuseSlowly(peer: String) async throws {
        metrics.authentication(ok: false)
        let delay = await throttle.failure(peer: peer, now: now())
        logger.warning("authentication refused", metadata: ["sync.peer": "\(peer)", "sync.delay_seconds": "\(delay)"])
        try await Task.sleep(for: .milliseconds(Int(delay * 1000)))
    }

    /// AUTH or ENROLL: the session (identity, device clock offset) and the AUTH_OK reply.
    func authenticate(_ credentials: ServerSessionStateMachine.Credentials) throws -> (ServerSessionStateMachine.Session, SyncFrame) {
        let t = now()
        let identity: DeviceRegistry.Identity
        let clientTime: Double
        var fields: [String: JSONValue] = ["server_time": .string(CanonicalDate.string(t))]
        switch credentials {
        case .enroll(let request):
            let (id, credential) = try Self.mapAuth { try registry.redeem(name: request.deviceName, secret: request.enrollmentSecret, now: t) }
            (identity, clientTime) = (id, request.clientTime)
            fields["device_name"] = .string(request.deviceName)
            fields["credential"] = .string(credential)
        case .auth(let request):
            identity = try Self.mapAuth { try registry.authenticate(name: request.deviceName, credential: request.credential) }
            clientTime = request.clientTime
            fields["device_name"] = .string(request.deviceName)
        }
        return (ServerSessionStateMachine.Session(identity: identity, clockOffset: clientTime - t), try .json(.authOK, .object(fields)))
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

    /// Whether the bundle being received is one to apply while it arrives: a stream, or one
    /// of `arrivingParts` parts or more.
    func appliesWhileArriving(_ machine: ServerSessionStateMachine) -> Bool {
        guard case .receiving(_, let transfer) = machine.state else { return false }
        return transfer.declared.map { $0.parts >= arrivingParts } ?? true
    }

    /// Starts applying the bundle being received while its parts arrive, when an apply
    /// thread can be spared and its header names a chain no other device holds (checked
    /// only: the chain is claimed at `BUNDLE_END`, before the apply may commit). Nil
    /// otherwise: it is applied once it is whole.
    func startArriving(_ transfer: ServerSessionStateMachine.Transfer, session: ServerSessionStateMachine.Session,
                       in applies: inout ThrowingTaskGroup<ArrivingApply.Ended, any Error>) async -> ArrivingApply? {
        let device = session.identity, declared = transfer.declared, sequence = transfer.sequence, path = transfer.file.path
        guard let first = transfer.file.header, let header = try? BundleVerifier.header(first) else { return nil }
        let chain = header.deviceChainHash
        guard await applier.beginArriving() else { return nil }
        let applier = self.applier
        let allowed = (try? await offload { () throws -> Bool in
            try requireActive(device)
            try Self.mapAuth { try registry.authorizeRead(device, chain: chain) }
            // A stream's manifest hash comes at its end: one at a sequence the chain holds
            // already (sent again, or divergent) is told apart by it, from the file.
            if declared == nil { return try applier.status(chain).0 < sequence }
            return true
        }) ?? false
        guard allowed else {
            await applier.endArriving()
            return nil
        }
        // The bytes that arrived (not those the device declared) at the minimum rate, one part ahead, after the grace.
        let pace = ArrivingLines.Pace(grace: arrivingGrace.seconds, bytesPerSecond: arrivingMinimumRate, ahead: BundlePartCodec.maxPartSize)
        let a = ArrivingApply(lines: ArrivingLines(depth: 4, partWait: arrivingPartWait, pace: pace), chain: chain)
        let (lines, t) = (a.lines, now())
        let claim = claimInTurn(chain, for: device, flag: a.claimedInTurn)
        applies.addTask {
            let started = ContinuousClock.now
            let result: Result<BundleApplier.Outcome, any Error>
            do {
                result = .success(try await applier.apply(chain: chain, arriving: lines, header: header, path: path, manifestHash: declared?.manifestHash,
                                                          sequence: sequence, bytes: declared?.uncompressedSize, at: t, claim: claim))
            } catch {
                result = .failure(error)
            }
            await applier.endArriving()
            return ArrivingApply.Ended(apply: a, result: result, seconds: (ContinuousClock.now - started).seconds)
        }
        return a
    }

    /// At `BUNDLE_END` of a bundle applied while it arrived: the device still active and the
    /// chain claimed for it, as `finish` does for one applied from its file.
    func claimForCommit(_ a: ArrivingApply, session: ServerSessionStateMachine.Session) async -> ArrivingApply.Claim {
        do {
            return ArrivingApply.Claim(bound: try await claim(a.chain, for: session.identity), failure: nil)
        } catch {
            return ArrivingApply.Claim(bound: false, failure: error)
        }
    }

    /// The claim a bundle makes of its chain inside its apply, in the chain's turn, just before
    /// the commit: the chain stays bound to the device whose bundle it holds, even where another
    /// connection's refused bundle let go of the binding since this one's own claim (it lets go
    /// only of a chain that holds no bundle, in the chain's turn: `ApplyQueue.ifChainEmpty`).
    /// Another device's chain is refused (`forbidden`), and so is a device revoked while its
    /// bundle waited for the turn (`unauthorized`); `flag` records a binding made here.
    func claimInTurn(_ chain: String, for device: DeviceRegistry.Identity, flag: ChainClaimFlag) -> @Sendable () throws -> Void {
        { [self] in if try claimNow(chain, for: device) { flag.setBound() } }
    }

    /// The device still active, and `chain` claimed for it (`DeviceRegistry.claim`): true when this bound it.
    func claim(_ chain: String, for device: DeviceRegistry.Identity) async throws -> Bool {
        try await offload { try claimNow(chain, for: device) }
    }

    /// `claim` on the calling thread (blocking: the registry's SQLite).
    func claimNow(_ chain: String, for device: DeviceRegistry.Identity) throws -> Bool {
        try requireActive(device)
        return try Self.mapAuth { try registry.claim(device, chain: chain, now: now()) }
    }

    /// Authorizes, verifies and applies a received bundle, as `declared` (by its `BUNDLE_BEGIN`
    /// or `BUNDLE_STREAM_END`); the reply to send. `arrived`: the outcome of its apply while it
    /// arrived, if it had one; one that stalled is applied again, from the file.
    func finish(_ transfer: ServerSessionStateMachine.Transfer, declared begin: BundleBegin, session: ServerSessionStateMachine.Session,
                arrived: ArrivingApply.Ended? = nil) async -> SyncFrame {
        let device = session.identity, clockOffset = session.clockOffset
        var chain: String?
        var bound = false
        /// Set when the claim inside the apply (the arriving one's, or the file's) bound the chain.
        var inTurn: ChainClaimFlag?
        let path = transfer.file.path
        do {
            let outcome: BundleApplier.Outcome
            let c: String
            if let arrived {
                (c, bound) = (arrived.apply.chain, arrived.claim.bound)
                chain = c
                inTurn = arrived.apply.claimedInTurn
                // Refused at the end (revoked, or the chain another device's): the apply stopped for it.
                if let failure = arrived.claim.failure {
                    metrics.arrivingApply(ended: "refused")
                    throw failure
                }
            } else {
                // The header kept as the first part arrived, else read back from the file.
                if let header = transfer.file.header {
                    c = try BundleVerifier.header(header).deviceChainHash
                } else {
                    c = try await offload { try ServerStore.peekChain(file: path) }
                }
                chain = c
            }
            // A stream applied without its hash, found its sequence taken since (by another connection):
            // the hash its end declared tells a bundle sent again from a divergent one, from the file.
            let taken = transfer.streamed && Self.isDivergence(arrived?.result)
            if let arrived { metrics.arrivingApply(ended: arrived.apply.lines.stalled ? "stalled" : taken ? "taken" : (try? arrived.result.get()) == nil ? "refused" : "applied") }
            if let arrived, !arrived.apply.lines.stalled, !taken {
                outcome = try arrived.result.get()
                metrics.bundle(outcome: outcome, seconds: arrived.seconds)
            } else {
                let claimed = try await claim(c, for: device)
                bound = bound || claimed
                let started = ContinuousClock.now
                let flag = ChainClaimFlag()
                inTurn = flag
                outcome = try await applier.apply(chain: c, path: path, manifestHash: begin.manifestHash, sequence: begin.sequence,
                                                  bytes: begin.uncompressedSize, at: now(), claim: claimInTurn(c, for: device, flag: flag))
                metrics.bundle(outcome: outcome, seconds: (ContinuousClock.now - started).seconds)
            }
            bound = false  // applied: the binding stands, whatever fails after this
            inTurn = nil
            let queue = offsiteUploads
            try await offload {
                try registry.recordSync(chain: c, now: now(), clockOffset: clockOffset)
                // Queued only: the upload never delays the acknowledgement, nor fails it (the
                // offsite service's hourly backfill queues a bundle missed here).
                if queue, case .applied(_, let sequence) = outcome { try? registry.enqueueUploads(chain: c, sequences: [sequence], now: now()) }
            }
            let status: String
            switch outcome {
            case .applied: status = "applied"
            case .alreadyApplied: status = "already_applied"
            }
            return try .json(.bundleAck, .object(["sequence": .int(begin.sequence), "manifest_hash": .string(begin.manifestHash), "status": .string(status)]))
        } catch {
            let e = Self.protocolError(error)
            if bound || inTurn?.isBound == true, let c = chain {
                // This bundle bound the chain; refused, it binds nothing, unless a bundle of the
                // chain that another connection sent (claiming the binding this one made) was applied.
                let registry = self.registry
                _ = try? await applier.ifChainEmpty(c) { try registry.release(device, chain: c) }
            }
            await refused(e, what: "bundle", chain: chain, sequence: begin.sequence, device: device, detail: e.message)
            return .error(e, sequence: begin.sequence)
        }
    }

    /// Throws `storage` when the data directory's file system has less than `diskReserveBytes`
    /// free (the device is told the disk is nearly full; the log says how full).
    func requireDiskRoom() throws {
        guard let free = space(store.quarantineDirectory)?.free, free < diskReserveBytes else { return }
        logger.warning("bundle refused: the disk is nearly full", metadata: ["disk.free_mib": "\(free >> 20)", "disk.reserve_mib": "\(diskReserveBytes >> 20)"])
        throw SyncProtocolError(.storage, "the server's disk is nearly full: nothing of this bundle is stored; sync again later (the server's administrator is told)")
    }

    /// Counts and logs a refused request, and records it for the administrator when it
    /// is one they must see: divergence, another device's chain, an invalid bundle.
    func refused(_ e: SyncProtocolError, what: String, chain: String?, sequence: Int?, device: DeviceRegistry.Identity, detail: String) async {
        metrics.refused(code: e.code.rawValue)
        var metadata: Logger.Metadata = ["sync.error": "\(e.code.rawValue)", "sync.device": "\(device.name)"]
        if let sequence { metadata["sync.sequence"] = "\(sequence)" }
        logger.warning("\(what) refused", metadata: metadata)
        // The device's own chain's state: refused until a good sync follows (another device's chain is not its to change).
        if let chain, e.code != .forbidden {
            _ = try? await offload { try registry.recordRefusal(chain: chain, code: e.code.rawValue, detail: detail, now: now()) }
        }
        guard [.divergence, .forbidden, .bundleInvalid].contains(e.code) else { return }
        _ = try? await offload { try registry.recordEvent(kind: e.code.rawValue, chain: chain, sequence: sequence, device: device.name, detail: detail, now: now()) }
    }

    /// Whether `result` is a refusal as `divergence`.
    static func isDivergence(_ result: Result<BundleApplier.Outcome, any Error>?) -> Bool {
        guard case .failure(let e as BundleApplier.ApplyError)? = result else { return false }
        return e.code == .divergence
    }

    static func protocolError(_ error: any Error) -> SyncProtocolError {
        if let e = error as? SyncProtocolError { return e }
        if let e = error as? BundleError { return SyncProtocolError(.bundleInvalid, "\(e.code.rawValue): \(e.message)") }
        if let e = error as? BundleApplier.ApplyError {
            switch e.code {
            case .divergence: return SyncProtocolError(.divergence, e.message)
            case .outOfOrder: return SyncProtocolError(.outOfOrder, e.message)
            case .unresolved: return SyncProtocolError(.bundleInvalid, "\(e.code.rawValue): \(e.message)")
            }
        }
        return SyncProtocolError(.storage, "the server could not read or write its data; try again later")
    }
}
