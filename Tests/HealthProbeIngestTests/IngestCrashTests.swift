import AsyncHTTPClient
import Foundation
import HealthProbeArchive
import HealthProbeIngest
import HealthProbeTestSupport
import NIOSSL
import Synchronization
import Testing

/// The built `hp-node serve`, killed with SIGKILL while posts are being recorded:
/// nothing it acknowledged is lost, what it kept is recorded at the next start, and the
/// phone's retries are answered without recording anything twice. SIGTERM stops it cleanly.
@Suite("Ingest killed mid-post", .serialized, .blocksOnTools)
struct IngestCrashTests {
    /// Starts `hp-node serve --ingest 127.0.0.1:0` on `root`; returns the process and its port.
    static func serve(_ root: String, log: String) async throws -> (Process, Int) {
        let p = Process()
        p.executableURL = try toolURL("hp-node")
        p.arguments = ["--home", root, "serve", "--ingest", "127.0.0.1:0"]
        FileManager.default.createFile(atPath: log, contents: nil)
        p.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: log))
        p.standardError = FileHandle.nullDevice
        try p.run()
        for _ in 0..<400 {
            let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
            if let r = text.range(of: "ingest on https://127.0.0.1:"), let port = Int(text[r.upperBound...].prefix { $0.isNumber }) { return (p, port) }
            try await Task.sleep(for: .milliseconds(50))
        }
        p.terminate()
        struct NoPort: Error {}
        throw NoPort()
    }

    @Test("SIGKILL while 24 posts are recorded: every acknowledged one is there, the kept ones are recorded at restart, retries are duplicates; SIGTERM exits 0")
    func sigkill() async throws {
        let dir = TempDir()
        let root = dir.path + "/home"
        let (created, key, _) = try runTool("hp-node", ["--home", root, "ingest-key", "create", "phone"])
        #expect(created == 0)
        let apiKey = key.trimmingCharacters(in: .whitespacesAndNewlines)
        let now = Date().timeIntervalSince1970
        var bodies: [[UInt8]] = []
        for i in 0..<24 {
            let times: [Double] = (0..<400).map { j in now - Double(i * 400 + j + 1) * 30 }
            bodies.append(HAESynthetic.points("heart_rate_variability", "ms", at: times, qty: Double(40 + i)))
        }
        var (process, port) = try await Self.serve(root, log: dir.path + "/serve1.log")
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.trustRoots = .certificates([try NIOSSLCertificate(file: root + "/keys/ingest-ca-cert.pem", format: .pem)])
        let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: .init(tlsConfiguration: tls))
        func node(_ port: Int) -> IngestNode {
            IngestNode(root: root, port: port, key: apiKey, fingerprint: "", client: client, queue: SyncQueue(), status: ServeStatus(path: dir.path + "/unused-status.json", initial: .init()))
        }
        let first = node(port)
        let pid = process.processIdentifier
        // The killer is a thread of its own (test tasks share two cooperative threads with every
        // other suite): it kills as soon as the server has recorded 3 bodies, with 21 still to go.
        let bodiesDir = root + "/capture/hae-phone/bodies"
        let recordedAtKill = Counter()
        let killer = Thread {
            for _ in 0..<60_000 {
                let names = (try? FileManager.default.contentsOfDirectory(atPath: bodiesDir)) ?? []
                let done = names.filter { $0.hasSuffix(".recorded.json") }.count
                if done >= 3 {
                    kill(pid, SIGKILL)
                    for _ in 0..<done { recordedAtKill.add() }
                    return
                }
                usleep(1000)
            }
            kill(pid, SIGKILL)
        }
        killer.start()
        let acknowledged = await withTaskGroup(of: Int?.self) { group in
            for (i, body) in bodies.enumerated() {
                group.addTask {
                    guard (try? await first.post(body, query: "period=since_last_sync&aggregation=none"))?.status == 200 else { return nil }
                    return i
                }
            }
            return await group.reduce(into: Set<Int>()) { if let i = $1 { $0.insert(i) } }
        }
        process.waitUntilExit()
        #expect(process.terminationReason == .uncaughtSignal)
        #expect(recordedAtKill.value >= 3 && acknowledged.count < bodies.count, "killed too late: \(acknowledged.count) acknowledged")
        let store = CaptureHomes(home: ArchiveHome(root: root)).bodies("phone")
        for i in acknowledged { #expect(try store.recorded(BodyStore.sha256(bodies[i]))?.outcome == "recorded", "acknowledged body \(i) lost") }

        (process, port) = try await Self.serve(root, log: dir.path + "/serve2.log")
        #expect(try store.pending().isEmpty, "kept bodies were not recorded at restart")
        // The phone retries everything it did not hear an answer for (and, here, everything).
        let second = node(port)
        var observations = Set<Int64>()
        for (i, body) in bodies.enumerated() {
            let r = try await second.post(body, query: "period=since_last_sync&aggregation=none")
            #expect(r.status == 200)
            if acknowledged.contains(i) { #expect(r.json["status"] as? String == "duplicate") }
            if let o = r.json["observation_id"] as? Int { observations.insert(Int64(o)) }
        }
        #expect(observations.count == bodies.count, "each body is one observation, once")
        process.terminate()  // SIGTERM
        process.waitUntilExit()
        #expect(process.terminationStatus == 0 && process.terminationReason == .exit)
        let status = try #require(ServeStatus.read(path: root + "/serve-status.json"))
        #expect(status.stoppedAt != nil)
        try await client.shutdown()
    }
}

/// A count shared by concurrent tasks.
final class Counter: Sendable {
    private let count = Mutex<Int>(0)
    func add() { count.withLock { $0 += 1 } }
    var value: Int { count.withLock { $0 } }
}
