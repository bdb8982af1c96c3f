import Foundation
import HealthProbeArchive
import HealthProbeCanonical
import HealthProbeProtocol
import Logging
import NIOCore

/// Brings a node's history back from its server (Protocol/README.md section 8): after
/// `hp-node reset --keep-chain`, or on a replacement device enrolled with a restore
/// token and given the old device's keys. Fetches its own chain's bundles one at a
/// time, checks each reply like any other, verifies and applies each exactly as the
/// server does, checks that the chain state after it equals the server's (before the
/// transaction commits), and logs it as sent, so the node then captures and syncs on
/// as the same chain. Run again after any failure, it resumes after the last bundle
/// applied. It trusts nothing the server sends: a bundle that fails a check is
/// refused and nothing of it stored. The archive work runs on the caller's task (a
/// command's; nothing else runs in that process meanwhile), the network on NIO's threads.
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
    /// Where each fetched bundle is written before it is applied (removed after).
    public let scratch: String
    public let logger: Logger
    /// Called after each applied bundle: (sequence, last sequence).
    public var onProgress: (Int, Int) -> Void = { _, _ in }
    public var replyTimeout: TimeAmount = SyncSession.replyTimeout

    public init(node: NodeArchive, scratch: String, logger: Logger = Archive.silentLogger) {
        self.node = node
        self.scratch = scratch
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
        try FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: true)
        let started = ContinuousClock.now
        return try await SyncSession.with(host: h, port: p, fingerprint: enrollment.fingerprint, replyTimeout: replyTimeout,
                                          version: SyncHello.restoreVersion) { session in
            try await session.authenticate(name: enrollment.name, credential: enrollment.credential, clientTime: node.clock.now())
            let status = try await session.chainStatus(node.deviceChainHash)
            guard progress.lastSequence <= status.lastSequence else {
                throw SyncProtocolError(.divergence, "this archive holds \(progress.lastSequence) bundles of the chain and the server \(status.lastSequence); the server's history is not this archive's")
            }
            var report = Report(hadSequence: progress.lastSequence, restored: 0, lastSequence: status.lastSequence, visibleRecords: 0,
                                chainStateDigest: nil, bytesOnWire: 0, seconds: 0)
            var sequence = progress.lastSequence
            while sequence < status.lastSequence {
                sequence += 1
                let state = try await fetchAndApply(&session, sequence: sequence, report: &report)
                (report.visibleRecords, report.chainStateDigest) = (state.visibleCount, state.digest)
                report.restored += 1
                onProgress(sequence, status.lastSequence)
                logger.info("bundle restored", metadata: ["sync.sequence": "\(sequence)"])
            }
            if report.restored == 0, sequence > 0 {
                let state = try archive.chainStateAfterReceived(sequence: sequence)
                (report.visibleRecords, report.chainStateDigest) = (state?.visibleCount ?? 0, state?.digest)
            }
            report.seconds = (ContinuousClock.now - started).seconds
            return report
        }
    }

    /// Asks for the bundle at `sequence`, writes its parts (checked) to a scratch file,
    /// and applies it; returns the chain state after it (the server's, and now this archive's).
    func fetchAndApply(_ session: inout SyncSession, sequence: Int, report: inout Report) async throws -> ChainStateDigest.Result {
        let request = try SyncFrame.json(.restoreRequest, .object(["device_chain_hash": .string(node.deviceChainHash), "sequence": .int(sequence)]))
        let reply = try await session.request(request)
        guard case .restoreBundle(let bundle) = reply else { throw SyncSession.unexpected(reply, expected: .restoreBundle) }
        guard bundle.sequence == sequence else {
            throw SyncProtocolError(.malformedFrame, "RESTORE_BUNDLE.sequence: \(bundle.sequence) is not the sequence asked for (\(sequence))")
        }
        let path = scratch + "/restore-\(sequence).jsonl"
        defer { try? FileManager.default.removeItem(atPath: path) }
        guard FileManager.default.createFile(atPath: path, contents: nil, attributes: [.posixPermissions: 0o600]),
              let file = FileHandle(forWritingAtPath: path) else {
            throw SyncProtocolError(.storage, "cannot write \(path); is the disk full?")
        }
        var (received, newlines, lastByte) = (0, 0, UInt8(0x0A))
        var inflated: [UInt8] = []
        do {
            defer { try? file.close() }
            for index in 0..<bundle.parts {
                let message = try await session.next()
                guard case .restorePart(let part) = message else { throw SyncSession.unexpected(message, expected: .restorePart) }
                guard part.index == index else {
                    throw SyncProtocolError(.malformedFrame, "RESTORE_PART \(part.index) arrived; expected part \(index) of \(bundle.parts)")
                }
                guard part.declaredSize <= bundle.uncompressedSize - received else {
                    throw SyncProtocolError(.inflateLimit, "the parts hold more than the \(bundle.uncompressedSize) bytes RESTORE_BUNDLE declared")
                }
                try part.compressed.withUnsafeReadableBytes {
                    try BundlePartCodec.inflate($0, declaredSize: part.declaredSize, into: &inflated)
                }
                report.bytesOnWire += part.compressed.readableBytes + 13
                received += inflated.count
                newlines += inflated.reduce(0) { $0 + ($1 == 0x0A ? 1 : 0) }
                if let last = inflated.last { lastByte = last }
                try file.write(contentsOf: inflated)
            }
        }
        guard received == bundle.uncompressedSize else {
            throw SyncProtocolError(.malformedFrame, "the restored bundle holds \(received) bytes; RESTORE_BUNDLE declared \(bundle.uncompressedSize)")
        }
        guard lastByte == 0x0A, newlines == bundle.itemCount + 2 else {
            throw SyncProtocolError(.malformedFrame, "RESTORE_BUNDLE declared \(bundle.itemCount) items; the bundle holds \(max(newlines - 2, 0)) whole lines after its header")
        }
        let expected = ChainStateDigest.Result(digest: bundle.chainStateDigest, visibleCount: bundle.visibleCount)
        let (archive, chain, chainHash, now) = (node.archive, node.deviceChainID, node.deviceChainHash, node.clock.now())
        let size = bundle.uncompressedSize, hash = bundle.manifestHash
        do {
            var head = try FileLines(path: path)
            // Only this node's own chain, at the sequence asked for (the applier checks the rest).
            guard let first = head.next() else { throw BundleError(.malformed, line: 1, "the bundle is empty") }
            let header = try BundleVerifier.header(first)
            guard header.deviceChainHash == chainHash, header.sequence == sequence else {
                throw SyncProtocolError(.malformedFrame, "the restored bundle's header names chain \(header.deviceChainHash.prefix(16))... sequence \(header.sequence), not this node's chain at \(sequence)")
            }
            try archive.applyRestored(lines: try FileLines(path: path), manifestHash: hash, sequence: sequence, chain: chain,
                                      expected: expected, now: now, bundleBytes: size)
        }
        return expected
    }
}
