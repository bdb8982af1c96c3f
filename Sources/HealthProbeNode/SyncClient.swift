import Foundation
#if canImport(Glibc)
import Glibc
#endif
import GRDB
import HealthProbeArchive
import HealthProbeProtocol
import Logging
import NIOCore
import NIOPosix

/// Pushes a node's unacknowledged observations to a server, oldest first
/// (Protocol/README.md section 4). Each bundle is built into an outbox file,
/// verified from that file, sent in zlib parts, and recorded as acknowledged
/// in the node's `bundle_log` once the server has applied it. After any
/// disconnect, running it again resumes from what the server reports.
public struct SyncClient {
    public struct Report: Sendable, Codable, Equatable {
        public var serverHadSequence: Int
        public var sent: Int
        public var alreadyApplied: Int
        public var lastSequence: Int
        public var bytesOnWire: Int
        public var uncompressedBytes: Int
        /// Seconds from sending each bundle's `BUNDLE_END` to its acknowledgement (the server's verify and apply).
        public var ackSeconds: [Double] = []
        /// Seconds, summed over the bundles sent: building them into the outbox, checking
        /// each stored part read back against its SHA-256 (part of the sending), and sending
        /// `BUNDLE_BEGIN` through the last part.
        public var buildSeconds: Double = 0
        public var checkSeconds: Double = 0
        public var sendSeconds: Double = 0
    }

    public let node: NodeArchive
    public let outbox: String
    public let logger: Logger
    /// Called after each acknowledged bundle: (sequence, last sequence to send).
    public var onProgress: (Int, Int) -> Void = { _, _ in }
    /// Called with each bundle's outbox file once built, before anything of it is sent
    /// (tests damage the file here).
    public var onBuilt: (String) throws -> Void = { _ in }
    /// How long to wait for any answer of the server.
    public var replyTimeout: TimeAmount = SyncSession.replyTimeout
    /// The largest part of a bundle before deflating (tests send many small parts).
    public var partSize = BundlePartCodec.maxPartSize

    public init(node: NodeArchive, outbox: String, logger: Logger = Archive.silentLogger) {
        self.node = node
        self.outbox = outbox
        self.logger = logger
    }

    /// Syncs with the enrolled server (`host`/`port` override the enrollment's address).
    public func sync(_ enrollment: NodeEnrollment, host: String? = nil, port: Int? = nil) async throws -> Report {
        try FileManager.default.createDirectory(atPath: outbox, withIntermediateDirectories: true)
        guard let (h, p) = host.flatMap({ h in port.map { (h, $0) } }) ?? SyncAddress.parse(enrollment.address) else {
            throw SyncProtocolError(.malformedFrame, "the enrolled server address \(enrollment.address) is not HOST:PORT")
        }
        return try await SyncSession.with(host: h, port: p, fingerprint: enrollment.fingerprint, replyTimeout: replyTimeout) { session in
            try await session.authenticate(name: enrollment.name, credential: enrollment.credential, clientTime: node.clock.now())
            return try await send(&session)
        }
    }

    func send(_ session: inout SyncSession) async throws -> Report {
        // Decoded and checked: 0...2^53-1, the hash null exactly when the sequence is 0.
        let status = try await session.chainStatus(node.deviceChainHash)
        let (serverSeq, serverHash) = (status.lastSequence, status.lastManifestHash)

        let observations = try await sendableObservations()
        var partBuffer: [UInt8] = []
        var report = Report(serverHadSequence: serverSeq, sent: 0, alreadyApplied: 0, lastSequence: serverSeq, bytesOnWire: 0, uncompressedBytes: 0)
        guard serverSeq <= observations.count else {
            try await reportDivergence(&session, at: observations.count, observations: observations, report: &report, buffer: &partBuffer)
            throw SyncProtocolError(.divergence, "the server holds \(serverSeq) bundles of this chain but this node has only \(observations.count) observations (was this node reset or reinstalled?); the server keeps the chain's history and refuses a different one. To bring that history back here: `hp-node reset --yes-delete-archive --keep-chain` (it deletes what this node captured since), then `hp-node restore`, then capture again; otherwise an administrator compares the chains (hp-server chains)")
        }
        var previous: String?
        if serverSeq > 0 {
            previous = try await manifestHash(upTo: serverSeq, observations: observations)
            guard previous == serverHash else {
                try await reportDivergence(&session, at: serverSeq, observations: observations, report: &report, buffer: &partBuffer)
                throw SyncProtocolError(.divergence, "the server's bundle \(serverSeq) of this chain differs from this node's (was this node reset or reinstalled?); the server keeps the chain's history and refuses a different one. To bring that history back here: `hp-node reset --yes-delete-archive --keep-chain` (it deletes what this node captured since), then `hp-node restore`, then capture again; otherwise an administrator compares the chains (hp-server chains)")
            }
        }
        for seq in (serverSeq + 1)..<(observations.count + 1) where seq > serverSeq {
            previous = try await sendBundle(&session, sequence: seq, observation: observations[seq - 1], previous: previous,
                                            total: observations.count, report: &report, buffer: &partBuffer)
        }
        return report
    }

    /// Sends this node's bundle at `sequence` where the server holds another, so that the
    /// server refuses it as `divergence` and records the refusal: a diverged device then shows
    /// as refused, not as synced. Whatever the server answers, nothing is recorded here.
    func reportDivergence(_ session: inout SyncSession, at sequence: Int, observations: [Int64], report: inout Report, buffer: inout [UInt8]) async throws {
        guard sequence >= 1, sequence <= observations.count else { return }
        let previous = sequence > 1 ? try await manifestHash(upTo: sequence - 1, observations: observations) : nil
        do {
            _ = try await sendBundle(&session, sequence: sequence, observation: observations[sequence - 1], previous: previous,
                                     total: observations.count, report: &report, buffer: &buffer, record: false)
        } catch let e as SyncProtocolError where e.code == .divergence {
            logger.warning("the server refused this node's history as divergent", metadata: ["sync.sequence": "\(sequence)"])
        }
    }

    /// Builds, checks and sends the bundle of `observation` at `sequence`, waits for its
    /// acknowledgement and (with `record`) records it; returns its manifest hash.
    func sendBundle(_ session: inout SyncSession, sequence seq: Int, observation obs: Int64, previous: String?, total: Int,
                    report: inout Report, buffer partBuffer: inout [UInt8], record: Bool = true) async throws -> String {
        let file = outbox + "/\(seq).parts"
        defer { try? FileManager.default.removeItem(atPath: file) }
        let link = previous
        let building = ContinuousClock.now
        // Built straight into deflated parts (a second thread deflates while the next part is built).
        let partSize = self.partSize
        let written = try await node.archive.readSnapshot { db in
            try OutboxBundle.write(db, observationID: obs, previousManifestHash: link, to: file, partSize: partSize)
        }
        let (hash, items, size, parts) = (written.manifestHash, written.trailer.itemCount, written.size, written.parts)
        try onBuilt(file)
        let sending = ContinuousClock.now
        report.buildSeconds += (sending - building).seconds
        try await session.send(.json(.bundleBegin, .object([
            "sequence": .int(seq), "manifest_hash": .string(hash), "parts": .int(parts.count),
            "item_count": .int(items), "uncompressed_size": .int(size)])))
        let handle = try FileHandle(forReadingFrom: URL(fileURLWithPath: file))
        defer { try? handle.close() }
        for (i, part) in parts.enumerated() {
            try OutboxBundle.read(part, fd: handle.fileDescriptor, into: &partBuffer)
            // Each part read back must be the bytes written: a part of an outbox file that
            // changed after the build is never sent, nor is the bundle's end (the server
            // discards a bundle without its end; it verifies everything else itself).
            let checking = ContinuousClock.now
            guard partBuffer.withUnsafeBytes({ part.matches($0) }) else {
                throw SyncProtocolError(.storage, "part \(i) of the outbox bundle \(file) changed after it was built; nothing of it is completed (sync again to rebuild it)")
            }
            report.checkSeconds += (ContinuousClock.now - checking).seconds
            var payload = ByteBuffer()
            payload.reserveCapacity(8 + part.compressedSize)
            payload.writeInteger(UInt32(i), endianness: .big)
            payload.writeInteger(UInt32(part.size), endianness: .big)
            payload.writeBytes(partBuffer)
            report.bytesOnWire += payload.readableBytes + 5
            report.uncompressedBytes += part.size
            try await session.send(SyncFrame(kind: .bundlePart, payload: payload))
        }
        let ended = ContinuousClock.now
        report.sendSeconds += (ended - sending).seconds
        try await session.send(.json(.bundleEnd, .object(["sequence": .int(seq), "manifest_hash": .string(hash)])))
        // Recorded only once the acknowledgement names exactly this bundle with a documented status.
        let status = try await session.acknowledgement(sequence: seq, manifestHash: hash)
        guard record else { return hash }
        report.ackSeconds.append((ContinuousClock.now - ended).seconds)
        switch status {
        case .applied: report.sent += 1
        case .alreadyApplied: report.alreadyApplied += 1
        }
        try await recordAcknowledged(sequence: seq, observation: obs, manifestHash: hash, previous: previous, items: items)
        report.lastSequence = seq
        onProgress(seq, total)
        logger.info("bundle acknowledged", metadata: ["sync.sequence": "\(seq)"])
        return hash
    }

    /// The chain's observations that may be sent, oldest first (stops at one still running).
    func sendableObservations() async throws -> [Int64] {
        let chain = node.deviceChainID
        // Plain values, not rows: GRDB's async read needs a Sendable result.
        let rows = try await node.archive.observationsWithRunning(chain: chain)
        var out: [Int64] = []
        for r in rows {
            if r.running { break }
            out.append(r.id)
        }
        return out
    }

    /// The manifest hash of the bundle at `sequence`, from the node's log or by building.
    func manifestHash(upTo sequence: Int, observations: [Int64]) async throws -> String {
        let chain = node.deviceChainID
        let logged = try await node.archive.sentManifestHashes(chain: chain, upTo: sequence)
        if let h = logged[sequence] { return h }
        var previous: String?
        for seq in 1...sequence {
            if let h = logged[seq] { previous = h; continue }
            let obs = observations[seq - 1]
            let link = previous
            previous = try await node.archive.manifestHash(observation: obs, previous: link)
        }
        return previous!
    }

    func recordAcknowledged(sequence: Int, observation: Int64, manifestHash: String, previous: String?, items: Int) async throws {
        let chain = node.deviceChainID
        let now = node.clock.now()
        try await node.archive.recordSent(chain: chain, sequence: sequence, observation: observation, manifestHash: manifestHash,
                                          previous: previous, items: items, now: now)
    }
}
