import Foundation
import HealthProbeArchive
import HealthProbeProtocol
import NIOCore
import NIOHTTP1
import NIOPosix
import Prometheus

/// The server's counters in Prometheus text format (no health values, no
/// device names: counts and durations only).
public struct ServerMetrics: Sendable {
    public let registry = PrometheusCollectorRegistry()
    private let connections: Gauge
    private let authOK: Counter
    private let authFailed: Counter
    private let applied: Counter
    private let alreadyApplied: Counter
    private let bytes: Counter
    private let applySeconds: DurationHistogram

    static func name(_ metric: String, _ unit: String, _ help: String) -> MetricNameDescriptor {
        MetricNameDescriptor(namespace: "hp", subsystem: "server", metricName: metric, unitName: unit, helpText: help)
    }
    static var bundlesName: MetricNameDescriptor { name("bundles", "total", "Bundles received, by result.") }

    public init() {
        connections = registry.makeGauge(descriptor: Self.name("connections", "", "Open sync connections."))
        let auth = Self.name("authentications", "total", "Authentication attempts, by result.")
        authOK = registry.makeCounter(descriptor: auth, labels: [("result", "ok")])
        authFailed = registry.makeCounter(descriptor: auth, labels: [("result", "refused")])
        applied = registry.makeCounter(descriptor: Self.bundlesName, labels: [("result", "applied")])
        alreadyApplied = registry.makeCounter(descriptor: Self.bundlesName, labels: [("result", "already_applied")])
        bytes = registry.makeCounter(descriptor: Self.name("received_bytes", "total", "Compressed bundle bytes received."))
        applySeconds = registry.makeDurationHistogram(descriptor: Self.name("apply", "seconds", "Verify-and-apply time per bundle."), buckets: [
            .milliseconds(10), .milliseconds(50), .milliseconds(100), .milliseconds(250), .milliseconds(500),
            .seconds(1), .seconds(5), .seconds(30), .seconds(120)])
    }

    func connectionOpened() { connections.increment() }
    func connectionClosed() { connections.decrement() }
    func authentication(ok: Bool) { (ok ? authOK : authFailed).increment() }
    func received(bytes n: Int) { bytes.increment(by: Int64(n)) }
    func bundle(outcome: BundleApplier.Outcome, seconds: Double) {
        switch outcome {
        case .applied: applied.increment()
        case .alreadyApplied: alreadyApplied.increment()
        }
        applySeconds.recordNanoseconds(Int64(seconds * 1e9))
    }
    /// A bundle's apply while it arrived ended: `applied` (or found applied already),
    /// `refused`, `stalled` (applied again from its file), `abandoned` (the connection ended).
    func arrivingApply(ended how: String) {
        registry.makeCounter(descriptor: Self.name("arriving_applies", "total", "Bundles applied while their parts arrived, by how the apply ended."),
                             labels: [("ended", how)]).increment()
    }
    func refused(code: String) {
        registry.makeCounter(descriptor: Self.bundlesName, labels: [("result", "refused_" + code)]).increment()
    }

    /// The metrics in Prometheus text exposition format.
    public func text() -> String { registry.emitToString() }

    /// Serves `GET /metrics` on `host:port` (meant for loopback) until cancelled.
    public func serve(host: String, port: Int, onBound: @Sendable (Int) -> Void = { _ in }) async throws {
        let server = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .bind(host: host, port: port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline()
                    return try NIOAsyncChannel<HTTPServerRequestPart, HTTPServerResponsePart>(wrappingChannelSynchronously: channel)
                }
            }
        onBound(server.channel.localAddress?.port ?? port)
        try await withThrowingDiscardingTaskGroup { group in
            try await server.executeThenClose { connections in
                for try await connection in connections {
                    group.addTask { try? await self.answer(connection) }
                }
            }
        }
    }

    private func answer(_ connection: NIOAsyncChannel<HTTPServerRequestPart, HTTPServerResponsePart>) async throws {
        try await connection.executeThenClose { inbound, outbound in
            var head: HTTPRequestHead?
            for try await part in inbound {
                switch part {
                case .head(let h): head = h
                case .body: break
                case .end:
                    guard let h = head else { return }
                    let ok = h.method == .GET && (h.uri == "/metrics" || h.uri.hasPrefix("/metrics?"))
                    let body = ByteBuffer(string: ok ? text() : "not found; metrics are at /metrics\n")
                    var headers = HTTPHeaders()
                    headers.add(name: "Content-Type", value: ok ? "text/plain; version=0.0.4; charset=utf-8" : "text/plain; charset=utf-8")
                    headers.add(name: "Content-Length", value: "\(body.readableBytes)")
                    headers.add(name: "Connection", value: "close")
                    try await outbound.write(.head(HTTPResponseHead(version: h.version, status: ok ? .ok : .notFound, headers: headers)))
                    try await outbound.write(.body(.byteBuffer(body)))
                    try await outbound.write(.end(nil))
                    return
                }
            }
        }
    }
}
