import Foundation
import GRDB
import HealthProbeArchive
import Logging
import NIOCore
import NIOPosix

/// Serves the sync protocol (Protocol/README.md): receives bundles into a
/// quarantine file, verifies and applies each in one transaction to its
/// chain's replica, and acknowledges only after the commit. Connections run
/// in a task group; bundles are applied one at a time (so each chain in order).
public struct SyncServer: Sendable {
    public let store: ServerStore
    public let logger: Logger
    private let applier: ApplyQueue
    /// Limits of Protocol/README.md section 6 (shorter in tests).
    public let helloTimeout: TimeAmount
    public let idleTimeout: TimeAmount

    public init(store: ServerStore, logger: Logger = Archive.silentLogger,
                helloTimeout: TimeAmount = .seconds(10), idleTimeout: TimeAmount = .seconds(120)) {
        self.store = store
        self.logger = logger
        self.helloTimeout = helloTimeout
        self.idleTimeout = idleTimeout
        applier = ApplyQueue(store: store)
    }

    /// Binds and serves until cancelled. `onBound` gets the bound port.
    public func run(host: String, port: Int, onBound: @Sendable (Int) -> Void = { _ in }) async throws {
        try store.requireInitialized()
        try FileManager.default.createDirectory(atPath: store.quarantineDirectory, withIntermediateDirectories: true)
        let (hello, idle) = (helloTimeout, idleTimeout)
        let server = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .bind(host: host, port: port) { channel in
                channel.eventLoop.makeCompletedFuture {
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
                    group.addTask { await self.handle(connection) }
                }
            }
        }
    }

    /// One connection, sequentially: hello, then requests.
    func handle(_ connection: NIOAsyncChannel<SyncInbound, SyncOutbound>) async {
        var quarantine: String?
        defer { if let q = quarantine { try? FileManager.default.removeItem(atPath: q) } }
        do {
            try await connection.executeThenClose { inbound, outbound in
                var messages = inbound.makeAsyncIterator()
                var receiving: Receiving?
                do {
                    guard case .hello? = try await messages.next() else { return }
                    try await outbound.write(.hello(SyncHello()))
                    while let message = try await messages.next() {
                        guard case .frame(let frame) = message else {
                            throw SyncProtocolError(.unexpectedMessage, "a second hello")
                        }
                        switch frame.kind {
                        case .ping:
                            try await outbound.write(.frame(SyncFrame(kind: .pong, payload: ByteBuffer())))
                        case .chainStatusRequest:
                            let chain = try ServerStore.chainHash(try frame.jsonObject())
                            let (seq, hash) = try store.status(chain)
                            try await outbound.write(.frame(.json(.chainStatus, .object([
                                "device_chain_hash": .string(chain), "last_sequence": .int(seq), "last_manifest_hash": .optional(hash)]))))
                        case .bundleBegin:
                            guard receiving == nil else { throw SyncProtocolError(.unexpectedMessage, "BUNDLE_BEGIN while a bundle is open") }
                            let r = try Receiving(begin: try frame.jsonObject(), directory: store.quarantineDirectory)
                            quarantine = r.path
                            receiving = r
                        case .bundlePart:
                            guard receiving != nil else { throw SyncProtocolError(.unexpectedMessage, "BUNDLE_PART outside a bundle") }
                            try receiving!.part(frame.payload)
                        case .bundleEnd:
                            guard var r = receiving else { throw SyncProtocolError(.unexpectedMessage, "BUNDLE_END outside a bundle") }
                            receiving = nil
                            try r.end(try frame.jsonObject())
                            let reply: SyncFrame
                            do {
                                let outcome = try await applier.apply(path: r.path, manifestHash: r.manifestHash)
                                let status: String
                                switch outcome {
                                case .applied: status = "applied"
                                case .alreadyApplied: status = "already_applied"
                                }
                                reply = try .json(.bundleAck, .object(["sequence": .int(r.sequence), "manifest_hash": .string(r.manifestHash), "status": .string(status)]))
                            } catch {
                                let e = Self.protocolError(error)
                                logger.warning("bundle refused", metadata: ["sync.sequence": "\(r.sequence)", "sync.error": "\(e.code.rawValue)"])
                                reply = .error(e, sequence: r.sequence)
                            }
                            try? FileManager.default.removeItem(atPath: r.path)
                            quarantine = nil
                            try await outbound.write(.frame(reply))
                        default:
                            throw SyncProtocolError(.unexpectedMessage, "a \(frame.kind) frame is not for the server")
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
        return SyncProtocolError(.storage, "the server could not store the bundle; try again later")
    }

    /// A bundle being received into a quarantine file.
    struct Receiving {
        let sequence: Int
        let manifestHash: String
        let parts: Int
        let uncompressedSize: Int
        let path: String
        var nextPart = 0
        var received = 0
        let handle: FileHandle

        init(begin o: [String: JSONValue], directory: String) throws {
            guard case .number(let seq)? = o["sequence"], seq >= 1, case .string(let hash)? = o["manifest_hash"], hash.count == 64,
                  case .number(let parts)? = o["parts"], parts >= 1, parts <= 1_000_000,
                  case .number(let size)? = o["uncompressed_size"], size >= 0 else {
                throw SyncProtocolError(.malformedFrame, "BUNDLE_BEGIN lacks sequence, manifest_hash, parts or uncompressed_size")
            }
            sequence = Int(seq)
            manifestHash = hash
            self.parts = Int(parts)
            uncompressedSize = Int(size)
            path = directory + "/\(UUID().uuidString).jsonl"
            guard FileManager.default.createFile(atPath: path, contents: nil), let h = FileHandle(forWritingAtPath: path) else {
                throw SyncProtocolError(.storage, "the server cannot write its quarantine file")
            }
            handle = h
        }

        mutating func part(_ payload: ByteBuffer) throws {
            var p = payload
            guard let index: UInt32 = p.readInteger(endianness: .big), let size: UInt32 = p.readInteger(endianness: .big) else {
                throw SyncProtocolError(.malformedFrame, "a BUNDLE_PART frame is shorter than its header")
            }
            guard Int(index) == nextPart, nextPart < parts else {
                throw SyncProtocolError(.malformedFrame, "BUNDLE_PART \(index) arrived; expected part \(nextPart) of \(parts)")
            }
            let data = try BundlePartCodec.inflate(Array(p.readableBytesView), declaredSize: Int(size))
            received += data.count
            guard received <= uncompressedSize else {
                throw SyncProtocolError(.inflateLimit, "the parts hold more than the \(uncompressedSize) bytes BUNDLE_BEGIN declared")
            }
            do { try handle.write(contentsOf: data) } catch {
                throw SyncProtocolError(.storage, "the server cannot write its quarantine file (disk full?)")
            }
            nextPart += 1
        }

        mutating func end(_ o: [String: JSONValue]) throws {
            try? handle.close()
            guard case .number(let seq)? = o["sequence"], Int(seq) == sequence, case .string(let hash)? = o["manifest_hash"], hash == manifestHash else {
                throw SyncProtocolError(.malformedFrame, "BUNDLE_END does not match its BUNDLE_BEGIN")
            }
            guard nextPart == parts, received == uncompressedSize else {
                throw SyncProtocolError(.malformedFrame, "the bundle ended after \(nextPart) of \(parts) parts and \(received) of \(uncompressedSize) bytes")
            }
        }
    }
}

/// Applies received bundles one at a time.
actor ApplyQueue {
    let store: ServerStore
    init(store: ServerStore) { self.store = store }

    func apply(path: String, manifestHash: String) throws -> BundleApplier.Outcome {
        try store.apply(file: path, manifestHash: manifestHash, now: Date().timeIntervalSince1970).outcome
    }
}
