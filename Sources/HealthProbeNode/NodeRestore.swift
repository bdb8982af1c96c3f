import Foundation
import Synchronization
import HealthProbeArchive
import HealthProbeCanonical
import HealthProbeProtocol
import Logging
import NIOCore
import NIOPosix

/// Brings a node's history back from its server (Protocol/README.md section 8): after
/// `hp-node reset --keep-chain`, or on a replacement device enrolled with a restore
/// token and given the old device's keys. Fetches its own chain's bundles one at a
/// time, checks each reply like any other, verifies and applies each exactly as the
/// server does, checks that the chain state after it equals the server's (before the
/// transaction commits), and logs it as sent, so the node then captures and syncs on
/// as the same chain. Run again after any failure, it resumes after the last bundle
/// applied. It trusts nothing the server sends: a bundle that fails a check is
/// refused and nothing of it stored. Each bundle is applied on a thread of its own while
/// its parts arrive, a few parts in flight; the next is asked for while it is applied.
public struct NodeRestore {
    public struct Report: Sendable, Codable, Equatable {
        /// Bundles the archive held before (a restore resumed).
        public var hadSequence: Int
        /// Bundles fetched and applied now.
        public var restored: Int
        /// The server's last sequence: the archive holds the chain up to it.
        public var lastSequence: Int
        /// Visible records after the last bundle, equal on both sides.
        public var visibleRecords: Int
        /// The chain-state digest after the last bundle, equal on both sides.
        public var chainStateDigest: String?
        public var bytesOnWire: Int
        public var seconds: Double
    }

    public let node: NodeArchive
    public let logger: Logger
    /// Called after each applied bundle: (sequence, last sequence).
    public var onProgress: (Int, Int) -> Void = { _, _ in }
    public var replyTimeout: TimeAmount = SyncSession.replyTimeout
    /// The hello version: 4 takes bundles of format 2, 3 has the server send each bundle's chain
    /// state after its parts (computed while they are sent); a server that predates them is asked
    /// again with 3, then 2.
    public var version: UInt16 = SyncHello.bundleFormatVersion

    /// A bundle the server announced: by `RESTORE_BUNDLE` (version 2, with the chain state
    /// after it) or `RESTORE_STREAM` (version 3: the state follows the parts, `RESTORE_STATE`).
    struct Announced: Sendable {
        /// What the bundle is: `RESTORE_STREAM`'s members, which `RESTORE_BUNDLE` holds too.
        var begin: BundleBegin
        var state: ChainStateDigest.Result?
        /// The frame that announced it, for messages.
        var name: String
    }

    /// The chain state the server said follows a bundle, once it said so.
    final class ExpectedState: Sendable {
        private let state = Mutex<ChainStateDigest.Result?>(nil)
        func set(_ s: ChainStateDigest.Result) { state.withLock { $0 = s } }
        func get() throws -> ChainStateDigest.Result {
            guard let s = state.withLock({ $0 }) else { throw SyncProtocolError(.malformedFrame, "the server sent no chain state for the bundle") }
            return s
        }
    }

    public init(node: NodeArchive, logger: Logger = Archive.silentLogger) {
        self.node = node
        self.logger = logger
    }

    /// Restores from the enrolled server (`host`/`port` override its address).
    public func restore(_ enrollment: NodeEnrollment, host: String? = nil, port: Int? = nil) async throws -> Report {
        guard let (h, p) = host.flatMap({ h in port.map { (h, $0) } }) ?? SyncAddress.parse(enrollment.address) else {
            throw SyncProtocolError(.malformedFrame, "the enrolled server address \(enrollment.address) is not HOST:PORT")
        }
        let chain = node.deviceChainID
        let archive = node.archive
        let progress = try archive.restoreProgress(chain: chain)
        guard progress.ownObservations == 0 else {
            throw ArchiveError(.invalidState, "this archive holds \(progress.ownObservations) observation(s) of its own; restore fills only an empty archive or continues one it made (after `hp-node reset --keep-chain`)")
        }
        let started = ContinuousClock.now
        // Each bundle's commit is checkpointed while the next one is applied.
        let checkpoints = try BackgroundCheckpoints.start(archive)
        do {
            // A server that predates version 3 sends each bundle's chain state before its parts (version 2).
            let report = try await SyncSession.preferring(version, else: [SyncHello.streamVersion, SyncHello.restoreVersion], logger: logger) { v in
                // Read as each attempt starts (one whose hello is refused ends before its first bundle).
                try await restore(enrollment, host: h, port: p, version: v, progress: try archive.restoreProgress(chain: chain), started: started, checkpoints: checkpoints)
            }
            try await Self.offload { checkpoints?.finish() }
            return report
        } catch {
            try? await Self.offload { checkpoints?.finish() }
            throw error
        }
    }

    private func restore(_ enrollment: NodeEnrollment, host h: String, port p: Int, version: UInt16,
                         progress: (lastSequence: Int, ownObservations: Int), started: ContinuousClock.Instant,
                         checkpoints: BackgroundCheckpoints?) async throws -> Report {
        let archive = node.archive
        return try await SyncSession.with(host: h, port: p, fingerprint: enrollment.fingerprint, replyTimeout: replyTimeout,
                                          version: version, helloRefusals: true) { session in
            try await session.authenticate(name: enrollment.name, credential: enrollment.credential, clientTime: node.clock.now())
            let status = try await session.chainStatus(node.deviceChainHash)
            guard progress.lastSequence <= status.lastSequence else {
                throw SyncProtocolError(.divergence, "this archive holds \(progress.lastSequence) bundles of the chain and the server \(status.lastSequence); the server's history is not this archive's")
            }
            var report = Report(hadSequence: progress.lastSequence, restored: 0, lastSequence: status.lastSequence, visibleRecords: 0,
                                chainStateDigest: nil, bytesOnWire: 0, seconds: 0)
            var sequence = progress.lastSequence
            // Each bundle is asked for once the last part of the one before has arrived, so the
            // server works out the next chain state while this node applies and checks the
            // last one; a bundle's apply starts only once the one before has committed.
            try await withThrowingTaskGroup(of: Void.self) { applies in
                /// The bundle received whole whose apply may still run, and the chain state after it.
                var applying: (sequence: Int, state: ChainStateDigest.Result)?
                /// Waits for that apply to commit (or throws its refusal) and counts the bundle.
                func settle() async throws {
                    guard let done = applying else { return }
                    try await applies.next()
                    (report.visibleRecords, report.chainStateDigest) = (done.state.visibleCount, done.state.digest)
                    report.restored += 1
                    onProgress(done.sequence, status.lastSequence)
                    logger.info("bundle restored", metadata: ["sync.sequence": "\(done.sequence)"])
                    applying = nil
                }
                while sequence < status.lastSequence {
                    sequence += 1
                    let bundle: Announced
                    do { bundle = try await requestBundle(&session, sequence: sequence) } catch {
                        // A refusal of the bundle before wins: it came first. Committed, it is counted.
                        try await settle()
                        throw error
                    }
                    try await settle()
                    applying = (sequence, try await receiveAndApply(&session, bundle, sequence: sequence, applies: &applies, report: &report,
                                                                    checkpoints: checkpoints))
                }
                try await settle()
            }
            if report.restored == 0, sequence > 0 {
                let state = try archive.chainStateAfterReceived(sequence: sequence)
                (report.visibleRecords, report.chainStateDigest) = (state?.visibleCount ?? 0, state?.digest)
            }
            report.seconds = (ContinuousClock.now - started).seconds
            return report
        }
    }

    /// Asks for the bundle at `sequence`: its `RESTORE_BUNDLE` (version 2) or `RESTORE_STREAM`
    /// (version 3), checked to be that bundle.
    func requestBundle(_ session: inout SyncSession, sequence: Int) async throws -> Announced {
        let request = try SyncFrame.json(.restoreRequest, .object(["device_chain_hash": .string(node.deviceChainHash), "sequence": .int(sequence)]))
        let reply = try await session.request(request)
        let bundle: Announced
        switch reply {
        case .restoreBundle(let b) where session.version < SyncHello.streamVersion:
            bundle = Announced(begin: b.begin, state: ChainStateDigest.Result(digest: b.chainStateDigest, visibleCount: b.visibleCount), name: "RESTORE_BUNDLE")
        case .restoreStream(let b) where session.version >= SyncHello.streamVersion:
            bundle = Announced(begin: b, state: nil, name: "RESTORE_STREAM")
        default:
            throw SyncSession.unexpected(reply, expected: session.version >= SyncHello.streamVersion ? .restoreStream : .restoreBundle)
        }
        guard bundle.begin.sequence == sequence else {
            throw SyncProtocolError(.malformedFrame, "\(bundle.name).sequence: \(bundle.begin.sequence) is not the sequence asked for (\(sequence))")
        }
        return bundle
    }

    /// Applies `bundle` (in `applies`, on a thread of its own) while its parts arrive, each
    /// checked before it is inflated, the whole checked before the apply may commit; returns
    /// once every part arrived, with the chain state the server says follows it (the apply
    /// checks this archive's against it before it commits). A transfer that fails ends the
    /// apply first, and the applier's own refusal wins when it stopped the transfer.
    func receiveAndApply(_ session: inout SyncSession, _ bundle: Announced, sequence: Int,
                         applies: inout ThrowingTaskGroup<Void, any Error>, report: inout Report,
                         checkpoints: BackgroundCheckpoints?) async throws -> ChainStateDigest.Result {
        let expected = ExpectedState()
        if let state = bundle.state { expected.set(state) }
        let handoff = ArrivingLines(depth: 2)
        let target = ArchiveHandle(node.archive)
        let (chain, now, size, hash) = (node.deviceChainID, node.clock.now(), bundle.begin.uncompressedSize, bundle.begin.manifestHash)
        // Not on NIO's pool, whose threads the hand-off may hold while they wait for it.
        applies.addTask {
            try await Self.onOwnThread {
                defer { handoff.queue.cancel(); target.release() }
                checkpoints?.beforeNextTransaction()
                try target.archive?.applyRestored(lines: handoff.lines, manifestHash: hash, sequence: sequence, chain: chain, expected: expected.get,
                                                  now: now, bundleBytes: size, transferChecked: handoff.checked)
                checkpoints?.committed(bytes: size)
            }
        }
        do {
            try await receive(&session, bundle, sequence: sequence, into: handoff, report: &report)
            if bundle.state == nil {
                // Version 3: the chain state after the bundle follows its parts; the lines end only once it came.
                let message = try await session.next()
                guard case .restoreState(let state) = message else { throw SyncSession.unexpected(message, expected: .restoreState) }
                guard state.sequence == sequence else {
                    throw SyncProtocolError(.malformedFrame, "RESTORE_STATE.sequence: \(state.sequence) is not the bundle just sent (\(sequence))")
                }
                expected.set(ChainStateDigest.Result(digest: state.chainStateDigest, visibleCount: state.visibleCount))
            }
            handoff.finish(failure: nil)
        } catch {
            handoff.finish(failure: error)
            do { try await applies.next() } catch let stopped where error is CancellationError {
                throw stopped  // the applier refused a line first: its reason, not the hand-off's
            } catch {}
            throw error
        }
        return try expected.get()
    }

    /// Receives the `RESTORE_PART`s `bundle` declared, checks each, and hands their lines on.
    func receive(_ session: inout SyncSession, _ bundle: Announced, sequence: Int, into handoff: ArrivingLines, report: inout Report) async throws {
        var (received, lines) = (0, 0)
        for index in 0..<bundle.begin.parts {
            let message = try await session.next()
            guard case .restorePart(let part) = message else { throw SyncSession.unexpected(message, expected: .restorePart) }
            guard part.index == index else {
                throw SyncProtocolError(.malformedFrame, "RESTORE_PART \(part.index) arrived; expected part \(index) of \(bundle.begin.parts)")
            }
            guard part.declaredSize <= bundle.begin.uncompressedSize - received else {
                throw SyncProtocolError(.inflateLimit, "the parts hold more than the \(bundle.begin.uncompressedSize) bytes \(bundle.name) declared")
            }
            // Into a buffer an earlier part held, once the applier is done with one, else a new one.
            var inflated = handoff.spareBuffer()
            try part.compressed.withUnsafeReadableBytes { try BundlePartCodec.inflate($0, declaredSize: part.declaredSize, into: &inflated) }
            guard inflated.last == 0x0A else {
                throw SyncProtocolError(.malformedFrame, "RESTORE_PART \(index) does not end at a line boundary")
            }
            report.bytesOnWire += part.compressed.readableBytes + 13
            received += inflated.count
            lines += ArrivingLines.lineCount(inflated)
            guard lines <= bundle.begin.itemCount + 2 else {
                throw SyncProtocolError(.malformedFrame, "\(bundle.name) declared \(bundle.begin.itemCount) items; the bundle holds more")
            }
            if index == 0 {
                // Only this node's own chain, at the sequence asked for (the applier checks the rest).
                let header = try BundleVerifier.header(ArrivingLines.firstLine(inflated))
                guard header.deviceChainHash == node.deviceChainHash, header.sequence == sequence else {
                    throw SyncProtocolError(.malformedFrame, "the restored bundle's header names chain \(header.deviceChainHash.prefix(16))... sequence \(header.sequence), not this node's chain at \(sequence)")
                }
            }
            // The part moves whole (cut into lines on the applying side).
            let whole = inflated
            try await Self.offload { try handoff.put(whole) }
        }
        guard received == bundle.begin.uncompressedSize else {
            throw SyncProtocolError(.malformedFrame, "the restored bundle holds \(received) bytes; \(bundle.name) declared \(bundle.begin.uncompressedSize)")
        }
        guard lines == bundle.begin.itemCount + 2 else {
            throw SyncProtocolError(.malformedFrame, "\(bundle.name) declared \(bundle.begin.itemCount) items; the bundle holds \(max(lines - 2, 0)) whole lines after its header")
        }
    }

    /// Blocking work (a hand-off to a full queue) on NIO's blocking-I/O threads.
    static func offload<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await NIOThreadPool.singleton.runIfActive(body)
    }

    /// `body` on a thread of its own (a `StageThread`), awaited.
    static func onOwnThread(_ body: @escaping @Sendable () throws -> Void) async throws {
        try await StageThread.run(name: "healthprobe.restore.apply", body)
    }
}

/// The archive for the thread applying a restored bundle, let go of as soon as it is done:
/// a closure the thread pool keeps a moment longer must not keep the archive (and its
/// writer lock) open after the restore returned.
final class ArchiveHandle: Sendable {
    private let held: Mutex<Archive?>
    init(_ archive: Archive) { held = Mutex(archive) }
    var archive: Archive? { held.withLock { $0 } }
    func release() { held.withLock { $0 = nil } }
}
