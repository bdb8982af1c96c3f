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
        /// `BUNDLE_BEGIN` through the last part. A streamed bundle (version 3) is sent while it
        /// is built: both count from the start of its build.
        public var buildSeconds: Double = 0
        public var checkSeconds: Double = 0
        public var sendSeconds: Double = 0
        /// `PING`s sent while the node left the server without a frame, a bundle's build say (`keepalive`).
        public var keepalivePings = 0
    }

    public let node: NodeArchive
    public let outbox: String
    public let logger: Logger
    /// Called after each acknowledged bundle: (sequence, last sequence to send).
    public var onProgress: (Int, Int) -> Void = { _, _ in }
    /// Called with a bundle's outbox file before each of its parts is read back to be sent
    /// (tests damage the file here).
    public var onStored: (String) throws -> Void = { _ in }
    /// The hello version to sync with: 4 sends bundles of format 2, 3 streams each bundle while
    /// it is built; a server that predates them is asked again with 3, then 1 (tests pin one).
    public var version: UInt16 = SyncHello.bundleFormatVersion
    /// How long to wait for any answer of the server.
    public var replyTimeout: TimeAmount = SyncSession.replyTimeout
    /// The largest part of a bundle before deflating (tests send many small parts).
    public var partSize = BundlePartCodec.maxPartSize
    /// While a bundle is built (streamed between its parts, or whole before it is declared),
    /// a `PING` is sent when a whole `keepalive` passed without a frame, so the server (which
    /// times out after 120 s without one, Protocol/README.md section 6) hears from the node at
    /// least every two of them (`SessionKeepalive`).
    public var keepalive: TimeAmount = SyncClient.defaultKeepalive
    public static let defaultKeepalive: TimeAmount = .seconds(30)
    /// Called on the building thread once each part of a bundle is in the outbox file
    /// (tests make a build slow here).
    var onPartBuilt: @Sendable (OutboxBundle.Part) -> Void = { _ in }

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
        // With a server that predates streamed bundles, each is built whole and declared before its parts (version 1).
        return try await SyncSession.preferring(version, else: [SyncHello.streamVersion, SyncHello.currentVersion], logger: logger) { v in
            try await sync(enrollment, host: h, port: p, version: v)
        }
    }

    private func sync(_ enrollment: NodeEnrollment, host: String, port: Int, version: UInt16) async throws -> Report {
        try await SyncSession.with(host: host, port: port, fingerprint: enrollment.fingerprint, replyTimeout: replyTimeout, version: version,
                                   keepalive: keepalive, helloRefusals: true) { session in
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
        report.keepalivePings = session.keepalivePings
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
        } catch let e as SyncProtocolError where e.code == .protocolVersion {
            // The bundle's format is not one this session carries (nothing was sent): the divergence is told all the same.
            logger.warning("the divergent bundle was not sent: \(e.message)", metadata: ["sync.sequence": "\(sequence)"])
        }
    }

    /// Builds, checks and sends the bundle of `observation` at `sequence`, waits for its
    /// acknowledgement and (with `record`) records it; returns its manifest hash. In a
    /// version-3 session each part is sent as soon as it is built (`BUNDLE_STREAM_BEGIN` ...
    /// `BUNDLE_STREAM_END`); else the whole bundle is built first (`BUNDLE_BEGIN` ... `BUNDLE_END`).
    func sendBundle(_ session: inout SyncSession, sequence seq: Int, observation obs: Int64, previous: String?, total: Int,
                    report: inout Report, buffer partBuffer: inout [UInt8], record: Bool = true) async throws -> String {
        let file = outbox + "/\(seq).parts"
        defer { try? FileManager.default.removeItem(atPath: file) }
        try await chooseFormat(sequence: seq, session: session, record: record)
        let (link, node, partSize) = (previous, self.node, self.partSize)
        let building = ContinuousClock.now
        var sending = building
        var reader = PartReader(path: file)
        defer { reader.close() }
        let written: OutboxBundle.Written
        if session.version >= SyncHello.streamVersion {
            try await session.send(.json(.bundleStreamBegin, .object(["sequence": .int(seq)])))
            // Built straight into deflated parts on the archive's reader (a second thread deflates);
            // each part is sent here as soon as it is in the file.
            let (recorded, parts) = AsyncStream.makeStream(of: OutboxBundle.Part.self)
            let onPartBuilt = self.onPartBuilt
            async let built = Self.build(node, observation: obs, previous: link, file: file, partSize: partSize, parts: parts, onPartBuilt: onPartBuilt)
            do {
                var index = 0
                for await part in recorded {
                    try await sendPart(part, index: index, reader: &reader, session: &session, report: &report, buffer: &partBuffer)
                    index += 1
                }
                written = try await built
                guard index == written.parts.count else {
                    throw SyncProtocolError(.storage, "the outbox bundle \(file) holds \(written.parts.count) parts but \(index) were sent; nothing of it is completed (sync again)")
                }
            } catch {
                // The build stops at its next part; nothing ends the bundle, so the server keeps nothing of it.
                parts.finish()
                _ = try? await built
                throw error
            }
            report.buildSeconds += (ContinuousClock.now - building).seconds
        } else {
            // The same build, whole before anything is sent.
            written = try await Self.build(node, observation: obs, previous: link, file: file, partSize: partSize, parts: nil, onPartBuilt: self.onPartBuilt)
            sending = ContinuousClock.now
            report.buildSeconds += (sending - building).seconds
            try await session.send(try written.declared(sequence: seq).frame(.bundleBegin))
            for (i, part) in written.parts.enumerated() {
                try await sendPart(part, index: i, reader: &reader, session: &session, report: &report, buffer: &partBuffer)
            }
        }
        let (hash, items) = (written.manifestHash, written.trailer.itemCount)
        let ended = ContinuousClock.now
        report.sendSeconds += (ended - sending).seconds
        if session.version >= SyncHello.streamVersion {
            try await session.send(try written.declared(sequence: seq).frame(.bundleStreamEnd))
        } else {
            try await session.send(.json(.bundleEnd, .object(["sequence": .int(seq), "manifest_hash": .string(hash)])))
        }
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

    /// The bundle at `sequence` is built in the format the chain's bundles there are in: in a
    /// session that carries format 2, the first bundle sent begins it (it is recorded before the
    /// build, so that the bundle is built in it again whenever it is). A chain never goes back to
    /// format 1: with a server that cannot take format 2 any more, the sync stops and says so.
    func chooseFormat(sequence: Int, session: SyncSession, record: Bool) async throws {
        let format = try await node.archive.sendingFormat(sequence: sequence, chain: node.deviceChainID,
                                                          mayBegin: record && session.version >= SyncHello.bundleFormatVersion)
        guard format < 2 || session.version >= SyncHello.bundleFormatVersion else {
            throw SyncProtocolError(.protocolVersion, "this node sends its bundles in format 2 (since an earlier sync with a newer server), which needs sync protocol version \(SyncHello.bundleFormatVersion); the server speaks \(session.version). Upgrade hp-server")
        }
    }

    /// Builds the bundle of `observation` into `file`, telling `parts` (when given: a bundle
    /// streamed while it is built) of each part once it is written; `parts` is finished
    /// however the build ends (before it starts included), so that the sender reading it
    /// never waits for parts that will not come.
    static func build(_ node: NodeArchive, observation: Int64, previous: String?, file: String, partSize: Int,
                      parts: AsyncStream<OutboxBundle.Part>.Continuation?, onPartBuilt: @escaping @Sendable (OutboxBundle.Part) -> Void = { _ in }) async throws -> OutboxBundle.Written {
        defer { parts?.finish() }
        return try await node.archive.readSnapshot { db in
            try OutboxBundle.write(db, observationID: observation, previousManifestHash: previous, to: file, partSize: partSize,
                                   onPart: { part in
                                       if let parts, case .terminated = parts.yield(part) { return false }
                                       onPartBuilt(part)
                                       return true
                                   })
        }
    }

    /// Reads stored part `index` back from the outbox file, checks it against the SHA-256
    /// recorded when it was written, and sends it as `BUNDLE_PART`.
    func sendPart(_ part: OutboxBundle.Part, index: Int, reader: inout PartReader, session: inout SyncSession,
                  report: inout Report, buffer partBuffer: inout [UInt8]) async throws {
        try onStored(reader.path)
        try OutboxBundle.read(part, fd: try reader.fd(), into: &partBuffer)
        // Each part read back must be the bytes written: a part of an outbox file that
        // changed after it was built is never sent, nor is the bundle's end (the server
        // discards a bundle without its end; it verifies everything else itself).
        let checking = ContinuousClock.now
        guard partBuffer.withUnsafeBytes({ part.matches($0) }) else {
            throw SyncProtocolError(.storage, "part \(index) of the outbox bundle \(reader.path) changed after it was built; nothing of it is completed (sync again to rebuild it)")
        }
        report.checkSeconds += (ContinuousClock.now - checking).seconds
        var payload = ByteBuffer()
        payload.reserveCapacity(8 + part.compressedSize)
        payload.writeInteger(UInt32(index), endianness: .big)
        payload.writeInteger(UInt32(part.size), endianness: .big)
        payload.writeBytes(partBuffer)
        report.bytesOnWire += payload.readableBytes + 5
        report.uncompressedBytes += part.size
        try await session.send(SyncFrame(kind: .bundlePart, payload: payload))
    }

    /// The outbox file, opened for reading at its first part (a streamed bundle's file is
    /// made by its build).
    struct PartReader {
        let path: String
        private var handle: FileHandle?

        init(path: String) { self.path = path }

        mutating func fd() throws -> Int32 {
            if let handle { return handle.fileDescriptor }
            let h = try FileHandle(forReadingFrom: URL(fileURLWithPath: path))
            handle = h
            return h.fileDescriptor
        }

        mutating func close() {
            try? handle?.close()
            handle = nil
        }
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
