import Foundation
import NIOCore
import NIOPosix
import NIOSSL
import Testing
@testable import HealthProbeArchive
import HealthProbeCanonical
@testable import HealthProbeServer
import HealthProbeProtocol
import HealthProbeNode
import HealthProbeTestSupport

/// A running test server: its port, store, and helpers to enroll devices and open raw connections.
struct TestServer {
    let port: Int
    let store: ServerStore

    var fingerprint: String { (try? store.identity().fingerprint) ?? "" }

    /// A one-time token for `name` (a device of `person`, when given), addressed to this server.
    func token(_ name: String, person: String? = nil) throws -> EnrollmentToken {
        let registry = try store.registry()
        let secret = try registry.issueToken(name: name, person: try person.map { try registry.personForEnrollment($0) }, now: Date().timeIntervalSince1970)
        return EnrollmentToken(address: "127.0.0.1:\(port)", fingerprint: fingerprint, name: name, secret: secret)
    }

    /// Enrolls `name` over the protocol (ENROLL) and returns the node's enrollment.
    func enroll(_ name: String, person: String? = nil) async throws -> NodeEnrollment {
        try await SyncClient.enroll(token: try token(name, person: person), clientTime: Date().timeIntervalSince1970)
    }

    /// A TLS connection pinned to this server's certificate, carrying raw bytes.
    func tlsChannel(fingerprint pin: String? = nil) async throws -> NIOAsyncChannel<ByteBuffer, ByteBuffer> {
        let tls = try PinnedTLS.clientContext()
        let pinned = pin ?? fingerprint
        return try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton).connect(host: "127.0.0.1", port: port) { ch in
            ch.eventLoop.makeCompletedFuture {
                try ch.pipeline.syncOperations.addHandler(try PinnedTLS.handler(context: tls, fingerprint: pinned))
                return try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: ch)
            }
        }
    }

    /// A plain TCP connection (no TLS).
    func plainChannel() async throws -> NIOAsyncChannel<ByteBuffer, ByteBuffer> {
        try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton).connect(host: "127.0.0.1", port: port) { ch in
            ch.eventLoop.makeCompletedFuture { try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: ch) }
        }
    }

    /// Writes `bytes` over a new connection (TLS unless `plain`), then reads until the server closes
    /// or what arrived contains `until` (without `readAll`, returns at once).
    func raw(_ bytes: [UInt8], plain: Bool = false, readAll: Bool = true, until: String? = nil) async throws -> [UInt8] {
        let channel = plain ? try await plainChannel() : try await tlsChannel()
        return try await channel.executeThenClose { inbound, outbound in
            try await outbound.write(ByteBuffer(bytes: bytes))
            var out: [UInt8] = []
            if readAll {
                do {
                    for try await chunk in inbound {
                        out += Array(chunk.readableBytesView)
                        if let until, String(decoding: out, as: UTF8.self).contains(until) { break }
                    }
                } catch {
                    // A TLS alert or reset ends the read.
                }
            }
            return out
        }
    }
}

/// Wire bytes for the start of a session: the hello, then `frames`.
func wire(hello: Bool = true, version: UInt16 = SyncHello.currentVersion, _ frames: [SyncFrame]) throws -> [UInt8] {
    var b = ByteBuffer()
    if hello { SyncHello(version: version).write(to: &b) }
    for f in frames { try SyncFrameEncoder().encode(data: f, out: &b) }
    return Array(b.readableBytesView)
}

/// An AUTH frame.
func authFrame(_ e: NodeEnrollment) throws -> SyncFrame {
    try .json(.auth, .object(["device_name": .string(e.name), "credential": .string(e.credential), "client_time": .string(CanonicalDate.string(Date().timeIntervalSince1970))]))
}

/// Runs a sync server (TLS, a fresh data directory) on 127.0.0.1 for the duration of `body`.
/// `arriving...`: when and how a bundle is applied while it arrives (`SyncServer`).
func withServer(_ data: TempDir, hello: TimeAmount = .seconds(10), idle: TimeAmount = .seconds(120),
                throttle: AuthThrottle = AuthThrottle(base: 0.05, maximum: 0.4), metrics: ServerMetrics = ServerMetrics(),
                arrivingParts: Int = 2, arrivingPartWait: Duration = .seconds(30), arrivingMinimumRate: Double = 1_048_576,
                arrivingGrace: Duration = .seconds(60), arrivingPiece: Int = 1 << 20, versions: ClosedRange<UInt16> = SyncHello.versions,
                diskReserveBytes: Int64 = 0,
                space: @escaping @Sendable (String) -> ServerConditions.Space? = ServerConditions.fileSystemSpace,
                _ body: (TestServer) async throws -> Void) async throws {
    let store = ServerStore(root: data.path)
    try store.create()
    let server = try SyncServer(store: store, helloTimeout: hello, idleTimeout: idle, throttle: throttle, metrics: metrics,
                                arrivingParts: arrivingParts, arrivingPartWait: arrivingPartWait, arrivingMinimumRate: arrivingMinimumRate,
                                arrivingGrace: arrivingGrace, arrivingPiece: arrivingPiece, versions: versions,
                                diskReserveBytes: diskReserveBytes, space: space)
    try await withThrowingTaskGroup(of: Void.self) { group in
        let (ports, continuation) = AsyncStream.makeStream(of: Int.self)
        group.addTask { try await server.run(host: "127.0.0.1", port: 0) { continuation.yield($0) } }
        var it = ports.makeAsyncIterator()
        guard let port = await it.next() else { return }
        defer { group.cancelAll() }
        try await body(TestServer(port: port, store: store))
    }
}

/// Whether the server's quarantine is empty, waiting (bounded) for a connection's
/// cleanup to remove its file.
func quarantineEmpties(_ store: ServerStore, within limit: Duration = .seconds(30)) async throws -> Bool {
    let deadline = ContinuousClock.now + limit
    while try !FileManager.default.contentsOfDirectory(atPath: store.quarantineDirectory).isEmpty && ContinuousClock.now < deadline {
        try await Task.sleep(for: .milliseconds(20))
    }
    return try FileManager.default.contentsOfDirectory(atPath: store.quarantineDirectory).isEmpty
}
