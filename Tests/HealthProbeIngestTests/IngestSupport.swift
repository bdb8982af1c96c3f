import AsyncHTTPClient
import Foundation
import HealthProbeArchive
import HealthProbeIngest
import HealthProbeTestSupport
import Logging
import NIOCore
import NIOSSL
import ServiceLifecycle

/// A node home serving the ingest endpoint over real TLS on 127.0.0.1, with one key.
struct IngestNode: Sendable {
    let root: String
    let port: Int
    let key: String
    let fingerprint: String
    let client: HTTPClient
    let queue: SyncQueue
    let status: ServeStatus

    var homes: CaptureHomes { CaptureHomes(home: ArchiveHome(root: root)) }

    /// Posts `body` with `key` (default: the node's) in `Authorization: Bearer`, or as `api-key` when `header` says so.
    func post(_ body: [UInt8], query: String = "", key: String? = nil, header: String = "authorization") async throws -> (status: Int, json: [String: Any]) {
        var request = HTTPClientRequest(url: "https://127.0.0.1:\(port)/ingest/hae" + (query.isEmpty ? "" : "?" + query))
        request.method = .POST
        request.headers.add(name: "content-type", value: "application/json")
        if let k = key ?? Optional(self.key), !k.isEmpty {
            request.headers.add(name: header, value: header == "authorization" ? "Bearer " + k : k)
        }
        request.body = .bytes(ByteBuffer(bytes: body))
        let response = try await client.execute(request, timeout: .seconds(120))
        let bytes = try await response.body.collect(upTo: 1 << 20)
        let json = (try? JSONSerialization.jsonObject(with: Data(buffer: bytes))) as? [String: Any] ?? [:]
        return (Int(response.status.code), json)
    }

    /// Posts the first half of `body`, waits `pause`, then the rest (a slow or stalled phone).
    func postSlowly(_ body: [UInt8], pause: Duration) async throws -> Int {
        var request = HTTPClientRequest(url: "https://127.0.0.1:\(port)/ingest/hae")
        request.method = .POST
        request.headers.add(name: "content-type", value: "application/json")
        request.headers.add(name: "authorization", value: "Bearer " + key)
        let half = body.count / 2
        let parts = SlowParts(parts: [ByteBuffer(bytes: body[..<half]), ByteBuffer(bytes: body[half...])], pause: pause)
        request.body = .stream(parts, length: .known(Int64(body.count)))
        do {
            let response = try await client.execute(request, timeout: .seconds(60))
            return Int(response.status.code)
        } catch {
            return 0  // the server closed the connection before its answer was read
        }
    }

    /// The observations of automation `name`'s chain (ids count up from 1 in a new archive).
    func observationCount(_ name: String) async throws -> Int64 {
        let node = try homes.automation(name).open(mode: .readOnly)  // a reader takes no lock
        return try await node.archive.latestObservationID(chain: node.deviceChainID) ?? 0
    }
}

/// Parts of a body with a pause before each but the first.
struct SlowParts: AsyncSequence, Sendable {
    let parts: [ByteBuffer]
    let pause: Duration
    struct AsyncIterator: AsyncIteratorProtocol {
        var left: [ByteBuffer]
        let pause: Duration
        var first = true
        mutating func next() async -> ByteBuffer? {
            guard !left.isEmpty else { return nil }
            if !first { try? await Task.sleep(for: pause) }
            first = false
            return left.removeFirst()
        }
    }
    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(left: parts, pause: pause) }
}

let quietLogger: Logger = { var l = Logger(label: "test.ingest"); l.logLevel = .critical; return l }()

/// Runs `body` against a node serving ingest (key for automation "phone"); `extra`
/// services run in the same group (a sync service, say).
func withIngest(root: String? = nil, archives: OpenArchives = OpenArchives(), settings: IngestServer.Settings = IngestServer.Settings(), now: @escaping @Sendable () -> Double = { Date().timeIntervalSince1970 },
                extra: @escaping @Sendable (SyncQueue, ServeStatus, OpenArchives) -> [any Service] = { _, _, _ in [] },
                _ body: @Sendable (IngestNode) async throws -> Void) async throws {
    let dir = TempDir()
    let root = root ?? dir.path + "/home"
    let home = ArchiveHome(root: root)
    _ = try archives.node(home)
    let keys = IngestKeys(keys: home.keyStore)
    let key = try keys.automation(forKey: "") == nil ? try keys.create(name: "phone", now: now()) : ""
    let identity = try IngestIdentity.loadOrCreate(home.keyStore, hostnames: [])
    let queue = SyncQueue()
    let status = ServeStatus(path: root + "/serve-status.json", initial: .init())
    let processor = IngestProcessor(homes: CaptureHomes(home: home), archives: archives, logger: quietLogger, utcOffset: { _ in 0 })
    _ = try await processor.recoverPending()
    let server = IngestServer(keys: keys, processor: processor, settings: settings, logger: quietLogger, now: now) { name in
        queue.due(CaptureHomes(home: home).automation(name).root, now: now())
    }
    var tls = TLSConfiguration.makeClientConfiguration()
    tls.trustRoots = .certificates(try NIOSSLCertificate.fromPEMBytes(Array(identity.authorityPEM.utf8)))
    let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: .init(tlsConfiguration: tls))
    defer { _ = client.shutdown() }
    let (ports, continuation) = AsyncStream.makeStream(of: Int.self)
    let app = try server.application(host: "127.0.0.1", port: 0, identity: identity) { continuation.yield($0) }
    try await withThrowingTaskGroup(of: Void.self) { group in
        let group2 = ServiceGroup(configuration: .init(services: [app] + extra(queue, status, archives), logger: quietLogger))
        group.addTask { try await group2.run() }
        var it = ports.makeAsyncIterator()
        guard let port = await it.next() else { return }
        try await body(IngestNode(root: root, port: port, key: key, fingerprint: identity.fingerprint, client: client, queue: queue, status: status))
        await group2.triggerGracefulShutdown()
        try await group.waitForAll()
    }
    try await client.shutdown()
}
