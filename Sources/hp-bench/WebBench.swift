import ArgumentParser
import Foundation
import HealthProbeArchive
import HealthProbeCLI
import HealthProbeNode
import HealthProbeServer
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL

/// `hp-bench web`: a household of `--chains` chains of `--samples` samples each (one
/// observation, then 1,000 changes), synced to a release `hp-server`; then that server
/// is restarted with the dashboard and `--clients` keep-alive HTTPS clients request the
/// overview, a chain page, a type chart (one chain and all chains), the second observation
/// classified, and a page of visible records, in turn. Reports each page's first (cold) view,
/// then, once the household's overlaps are counted (warm), p50/p95/max per page, and the
/// server's peak RSS while serving (the restart keeps the sync phase out of it).
struct WebBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "web", abstract: "Measure the web dashboard's latency under concurrent clients.")

    @Option(name: .long, help: "Chains in the household.") var chains: Int = 4
    @Option(name: .long, help: "Samples per chain.") var samples: Int = 250_000
    @Option(name: .long, help: "Concurrent clients.") var clients: Int = 8
    @Option(name: .long, help: "Requests per client (cycling through the pages).") var requests: Int = 150
    @Flag(name: .long, help: "Serve the household an earlier run with --keep left in --dir, rather than make one (--chains and --samples are then what it holds).")
    var reuse = false
    @OptionGroup var bench: BenchOptions

    struct Result: Codable {
        var page: String
        var requests: Int
        var p50Ms: Double
        var p95Ms: Double
        var maxMs: Double
        /// The page's first answer after the server started (nothing cached, files cold in SQLite's cache).
        var coldMs: Double
        var serverPeakRssBytes: Int64
        /// Seconds from the end of the cold views until the household's overlaps were counted.
        var overlapsCountedAfterSeconds: Double
    }

    func validate() throws {
        guard (1...64).contains(chains), (1...10_000_000).contains(samples), (1...256).contains(clients), (1...100_000).contains(requests) else {
            throw ValidationError("--chains 1...64, --samples 1...10000000, --clients 1...256, --requests 1...100000")
        }
        // Client c's request r asks for page (r + c) % pageCount: clients + requests - 1 pages in all.
        guard clients + requests > Self.pageCount else {
            throw ValidationError("--clients \(clients) with --requests \(requests) leaves a page unrequested: give --requests \(Self.pageCount) or more")
        }
        if reuse, bench.dir.map({ !FileManager.default.fileExists(atPath: $0 + "/server") }) ?? true {
            throw ValidationError("--reuse needs --dir naming the directory an earlier `hp-bench web --keep --dir DIR` left (DIR/server)")
        }
    }

    /// The pages measured (`run`'s list).
    static let pageCount = 8

    func run() async throws {
        let root = bench.workDirectory("web")
        defer { if !reuse { bench.cleanUp(root) } }
        let password = "bench-password-123"
        var hashes: [String] = []
        let store: ServerStore
        if reuse {
            store = ServerStore(root: root + "/server")
            hashes = try store.chains()
            guard !hashes.isEmpty else { throw ValidationError("\(root)/server holds no chain") }
        } else {
            // The household is made through a server without the dashboard, then served by a new one.
            let maker = try BenchServer.start(data: root + "/server")
            defer { maker.stop() }
            try maker.store.registry().addPerson(name: "admin", role: .admin, password: password, now: Date().timeIntervalSince1970, cost: 4)
            for i in 0..<chains {
                let home = ArchiveHome(root: root + "/node\(i)")
                let clock = ManualClock(1_750_000_000)
                try bench.captureHeartRate(home: home, clock: clock, count: samples, offset: 0)
                clock.advance(3600)
                try bench.captureHeartRate(home: home, clock: clock, count: 1000, offset: samples)
                let enrollment = try await maker.enroll("phone\(i)")
                let node = try home.open(clock: clock)
                _ = try await SyncClient(node: node, outbox: root + "/outbox\(i)").sync(enrollment)
                hashes.append(node.deviceChainHash)
                FileHandle.standardError.write(Data("synced chain \(i + 1) of \(chains)\n".utf8))
            }
            store = maker.store
        }
        let server = try BenchServer.launch(binary: try BenchServer.serverBinary(), store: store, web: true)
        defer { server.stop() }
        guard let webPort = server.webPort else { throw ValidationError("hp-server did not report the dashboard's port") }
        let type = "HKQuantityTypeIdentifierHeartRate"
        let pages = [("overview", "/"), ("chain", "/chains/\(hashes[0])"), ("type_chart", "/chains/\(hashes[0])/types/\(type)"),
                     ("type_all_chains", "/types/\(type)"), ("type_all_chains_30d", "/types/\(type)?range=30d"),
                     ("observation_classified", "/chains/\(hashes[0])/observations/2"),
                     ("disappeared_page", "/api/v1/chains/\(hashes[0])/observations/2/disappeared"),
                     ("visible_page", "/chains/\(hashes[0])/observations/2/visible")]
        guard pages.count == Self.pageCount else { throw ValidationError("WebBench.pageCount is \(Self.pageCount), the pages \(pages.count)") }
        let session = try await HTTPSClient.signIn(port: webPort, name: "admin", password: password)
        // Cold: each page once, in turn, before anything is cached.
        let cold = try await HTTPSClient.connect(port: webPort, cookie: session) { client in
            var out: [Double] = []
            for page in pages {
                let start = DispatchTime.now().uptimeNanoseconds
                let status = try await client.get(page.1)
                guard status == 200 else { throw ValidationError("\(page.1) answered \(status)") }
                out.append(Double(DispatchTime.now().uptimeNanoseconds - start) / 1e6)
            }
            return out
        }
        // Warm: the overlap warmer's first count of the household (a merge over every chain) is
        // made before the clients start; how long it took after the start is reported.
        let warmStart = DispatchTime.now().uptimeNanoseconds
        try await HTTPSClient.connect(port: webPort, cookie: session) { client in
            while true {
                let (status, body) = try await client.text("/api/v1/types/\(type)")
                guard status == 200 else { throw ValidationError("/api/v1/types/\(type) answered \(status)") }
                if hashes.count < 2 || body.contains("\"overlaps_counted_at\"") { return }
                guard DispatchTime.now().uptimeNanoseconds - warmStart < 600_000_000_000 else {
                    throw ValidationError("the household's overlaps were not counted within 10 minutes (see the server's log)")
                }
                try await Task.sleep(for: .milliseconds(250))
            }
        }
        let warmSeconds = Double(DispatchTime.now().uptimeNanoseconds - warmStart) / 1e9
        let requests = self.requests
        let latencies = try await withThrowingTaskGroup(of: [(Int, Double)].self) { group in
            for c in 0..<clients {
                group.addTask {
                    try await HTTPSClient.connect(port: webPort, cookie: session) { client in
                        var out: [(Int, Double)] = []
                        for r in 0..<requests {
                            let p = (r + c) % pages.count
                            let start = DispatchTime.now().uptimeNanoseconds
                            let status = try await client.get(pages[p].1)
                            guard status == 200 else { throw ValidationError("\(pages[p].1) answered \(status)") }
                            out.append((p, Double(DispatchTime.now().uptimeNanoseconds - start) / 1e6))
                        }
                        return out.map { Pair(page: $0.0, ms: $0.1) }
                    }.map { ($0.page, $0.ms) }
                }
            }
            var all: [(Int, Double)] = []
            for try await part in group { all += part }
            return all
        }
        let rss = server.peakRSS
        var results: [Result] = []
        for (i, page) in pages.enumerated() {
            let ms = latencies.filter { $0.0 == i }.map(\.1).sorted()
            func pct(_ q: Double) -> Double { ms[min(ms.count - 1, Int((Double(ms.count) * q).rounded(.up)) - 1)] }
            results.append(Result(page: page.0, requests: ms.count, p50Ms: pct(0.5), p95Ms: pct(0.95), maxMs: ms.last ?? 0, coldMs: cold[i], serverPeakRssBytes: rss, overlapsCountedAfterSeconds: warmSeconds))
        }
        if bench.json { for r in results { try Output.jsonLine(r) }; return }
        print(reuse ? "the \(hashes.count) chains in \(root), \(clients) clients, \(requests) requests each:" : "\(chains) chains x \(samples) samples, \(clients) clients, \(requests) requests each:")
        for r in results {
            print(String(format: "%@: cold %.1f ms; %d requests, p50 %.1f ms, p95 %.1f ms, max %.1f ms", r.page, r.coldMs, r.requests, r.p50Ms, r.p95Ms, r.maxMs))
        }
        print(String(format: "household overlaps counted %.1f s after the cold views (the clients started then)", warmSeconds))
        print(String(format: "server peak RSS while serving: %.1f MB", Double(rss) / 1_048_576))
    }
}

struct Pair: Sendable { let page: Int; let ms: Double }

/// A keep-alive HTTPS/1.1 connection for the benchmark (certificate not verified:
/// loopback, the bench's own server).
enum HTTPSClient {
    /// One connection's request/answer loop, used by one task.
    struct Connection {
        var iterator: NIOAsyncChannelInboundStream<HTTPClientResponsePart>.AsyncIterator
        let writer: NIOAsyncChannelOutboundWriter<HTTPClientRequestPart>
        let port: Int
        let cookie: String?

        /// Sends a request and reads the whole answer: status, headers, body bytes.
        mutating func send(_ method: HTTPMethod, _ path: String, body: String? = nil) async throws -> (Int, HTTPHeaders, Int) {
            let (status, headers, count, _) = try await exchange(method, path, body: body, keep: false)
            return (status, headers, count)
        }

        /// A GET's status and body text.
        mutating func text(_ path: String) async throws -> (Int, String) {
            let (status, _, _, bytes) = try await exchange(.GET, path, body: nil, keep: true)
            return (status, String(decoding: bytes, as: UTF8.self))
        }

        /// Sends a request and reads the answer; the body's bytes are kept when `keep` (else only counted).
        private mutating func exchange(_ method: HTTPMethod, _ path: String, body: String?, keep: Bool) async throws -> (Int, HTTPHeaders, Int, [UInt8]) {
            var head = HTTPRequestHead(version: .http1_1, method: method, uri: path)
            head.headers.add(name: "Host", value: "127.0.0.1:\(port)")
            if let cookie { head.headers.add(name: "Cookie", value: cookie) }
            if let body {
                head.headers.add(name: "Content-Type", value: "application/json")
                head.headers.add(name: "Content-Length", value: String(body.utf8.count))
            }
            try await writer.write(.head(head))
            if let body { try await writer.write(.body(.byteBuffer(ByteBuffer(string: body)))) }
            try await writer.write(.end(nil))
            var status = 0, headers = HTTPHeaders(), count = 0, bytes: [UInt8] = []
            while let part = try await iterator.next() {
                switch part {
                case .head(let h): status = Int(h.status.code); headers = h.headers
                case .body(var b):
                    count += b.readableBytes
                    if keep { bytes += b.readBytes(length: b.readableBytes) ?? [] }
                case .end: return (status, headers, count, bytes)
                }
            }
            throw ValidationError("the server closed the connection")
        }

        mutating func get(_ path: String) async throws -> Int { try await send(.GET, path).0 }
    }

    static func connect<T: Sendable>(port: Int, cookie: String?, _ body: (inout Connection) async throws -> T) async throws -> T {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.certificateVerification = .none
        let context = try NIOSSLContext(configuration: tls)
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton).connect(host: "127.0.0.1", port: port) { ch in
            ch.eventLoop.makeCompletedFuture {
                try ch.pipeline.syncOperations.addHandler(try NIOSSLClientHandler(context: context, serverHostname: nil))
                try ch.pipeline.syncOperations.addHTTPClientHandlers()
                return try NIOAsyncChannel<HTTPClientResponsePart, HTTPClientRequestPart>(wrappingChannelSynchronously: ch)
            }
        }
        return try await channel.executeThenClose { inbound, outbound in
            var c = Connection(iterator: inbound.makeAsyncIterator(), writer: outbound, port: port, cookie: cookie)
            return try await body(&c)
        }
    }

    /// Signs in through the API; the session cookie.
    static func signIn(port: Int, name: String, password: String) async throws -> String {
        try await connect(port: port, cookie: nil) { c in
            let (status, headers, _) = try await c.send(.POST, "/api/v1/session", body: "{\"name\":\"\(name)\",\"password\":\"\(password)\"}")
            guard status == 201, let cookie = headers["Set-Cookie"].first?.split(separator: ";").first else {
                throw ValidationError("sign-in answered \(status)")
            }
            return String(cookie)
        }
    }
}
