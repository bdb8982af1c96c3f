import ArgumentParser
import Foundation
import HealthProbeArchive
import HealthProbeNode
import HealthProbeServer
import HealthProbeProtocol

/// The release `hp-server` binary serving a fresh data directory on 127.0.0.1
/// in its own process (so its peak RSS is its own), for the sync benchmarks.
struct BenchServer {
    let process: Process
    let port: Int
    let store: ServerStore

    /// Initializes `data` and starts `hp-server serve` from the same build directory as this binary.
    static func start(data: String, web: Bool = false, config: [String: Any]? = nil) throws -> BenchServer {
        let binary = try serverBinary()
        let store = ServerStore(root: data)
        try store.create()
        if let config {
            try JSONSerialization.data(withJSONObject: config, options: [.sortedKeys]).write(to: URL(fileURLWithPath: data + "/config.json"))
        }
        return try launch(binary: binary, store: store, web: web)
    }

    /// `hp-server` beside this binary.
    static func serverBinary() throws -> String { try sibling("hp-server") }

    /// The release executable `name` beside this binary.
    static func sibling(_ name: String) throws -> String {
        let binary = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent().appendingPathComponent(name).path
        guard FileManager.default.isExecutableFile(atPath: binary) else {
            throw ValidationError("\(binary) is missing: build it first (swift build -c release --product \(name))")
        }
        return binary
    }

    /// `hp-server restore --from backup --data target` in its own process: its seconds and
    /// peak RSS (VmHWM, read every 20 ms while it runs).
    static func rebuild(from backup: String, to target: String, config: String? = nil) throws -> (seconds: Double, peakRSS: Int64, cpuSeconds: Double) {
        let run = try measured(try serverBinary(), ["restore", "--data", target, "--from", backup] + (config.map { ["--config", $0] } ?? []))
        return (run.seconds, run.peakRSS, run.cpuSeconds)
    }

    /// `binary arguments` in its own process, as a user runs it: its seconds, peak RSS
    /// (VmHWM, read every 20 ms while it runs) and standard output; throws unless it exits 0.
    /// `cpuSeconds`: the process's user and system time, from the children's usage
    /// (`RUSAGE_CHILDREN`) before and after it was waited for.
    static func measured(_ binary: String, _ arguments: [String]) throws -> (seconds: Double, peakRSS: Int64, cpuSeconds: Double, output: Data) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = arguments
        // Standard output into a file (a pipe nobody reads while it runs could fill and stop the process).
        let path = NSTemporaryDirectory() + "hp-bench-\(UUID().uuidString).out"
        guard FileManager.default.createFile(atPath: path, contents: nil), let output = FileHandle(forUpdatingAtPath: path) else {
            throw ValidationError("cannot create \(path)")
        }
        defer { try? output.close(); try? FileManager.default.removeItem(atPath: path) }
        process.standardOutput = output
        let started = DispatchTime.now().uptimeNanoseconds
        let cpuBefore = Measure.childrenCPUSeconds()
        try process.run()
        var peak: Int64 = 0
        while process.isRunning {
            peak = max(peak, Measure.peakRSS(pid: process.processIdentifier))
            Thread.sleep(forTimeInterval: 0.02)
        }
        process.waitUntilExit()
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9
        let name = (binary as NSString).lastPathComponent
        guard process.terminationStatus == 0 else {
            throw ValidationError("\(name) \(arguments.prefix(3).joined(separator: " ")) failed (exit \(process.terminationStatus))")
        }
        try output.seek(toOffset: 0)
        return (seconds, peak, Measure.childrenCPUSeconds() - cpuBefore, try output.readToEnd() ?? Data())
    }

    /// Web port, when started with the dashboard (`--web`).
    var webPort: Int? = nil

    static func launch(binary: String, store: ServerStore, web: Bool) throws -> BenchServer {
        let data = store.root
        let process = Process()
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = ["serve", "--data", data, "--listen", "127.0.0.1:0"] + (web ? ["--web", "127.0.0.1:0"] : [])
        let out = Pipe()
        process.standardOutput = out
        // The server's log stays quiet, unless statements are being profiled (HP_SQL_SLOW_MS).
        process.standardError = ProcessInfo.processInfo.environment["HP_SQL_SLOW_MS"] == nil ? FileHandle.nullDevice : FileHandle.standardError
        try process.run()
        guard let ports = readPorts(out, web: web), let port = ports["listening on "] else {
            process.terminate()
            throw ValidationError("hp-server did not report its port")
        }
        var server = BenchServer(process: process, port: port, store: store)
        server.webPort = ports["dashboard on "]
        return server
    }

    /// Enrolls a device over the protocol (`ENROLL`), as a real node would be.
    func enroll(_ name: String) async throws -> NodeEnrollment {
        let secret = try store.registry().issueToken(name: name, now: Date().timeIntervalSince1970)
        let token = EnrollmentToken(address: "127.0.0.1:\(port)", fingerprint: try store.identity().fingerprint, name: name, secret: secret)
        return try await SyncClient.enroll(token: token, clientTime: Date().timeIntervalSince1970)
    }

    /// The server process's peak RSS since it started.
    var peakRSS: Int64 { Measure.peakRSS(pid: process.processIdentifier) }
    /// CPU seconds the server process has used since it started.
    var cpuSeconds: Double { Measure.cpuSeconds(pid: process.processIdentifier) }

    func stop() {
        if process.isRunning { process.terminate(); process.waitUntilExit() }
    }

    /// The ports `hp-server serve` announces: sync (`listening on`) and, with `web`, the dashboard.
    static func readPorts(_ pipe: Pipe, web: Bool) -> [String: Int]? {
        var text = ""
        var ports: [String: Int] = [:]
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline {
            let d = pipe.fileHandleForReading.availableData
            if d.isEmpty { break }
            text += String(decoding: d, as: UTF8.self)
            for line in text.split(separator: "\n") {
                for prefix in ["listening on ", "dashboard on "] where line.hasPrefix(prefix) {
                    let digits = line.split(separator: ":").last.map { $0.filter(\.isNumber) } ?? ""
                    ports[prefix] = Int(digits)
                }
            }
            if ports["listening on "] != nil && (!web || ports["dashboard on "] != nil) { return ports }
        }
        return nil
    }
}

extension BenchOptions {
    /// One anchored observation of `count` heart-rate samples (indices from `offset`) in `home`.
    func captureHeartRate(home: ArchiveHome, clock: ManualClock, count: Int, offset: Int) throws {
        let node = try home.open(clock: clock)
        let session = try CaptureSession.begin(node, context: ObservationContext(triggerReason: .benchmark))
        let run = try session.beginTypeRun(CaptureBench.types[0], kind: .anchored)
        let pipeline = PipelinedPageWriter(run: run)
        var page: [CapturedSample] = []
        for i in offset..<(offset + count) {
            page.append(CaptureBench.sample(type: 0, index: i, generation: 0)!)
            if page.count == pageSize { try pipeline.submit(page, to: run); page = [] }
        }
        if !page.isEmpty { try pipeline.submit(page, to: run) }
        try pipeline.flush()
        _ = try run.complete()
        try session.finish()
    }
}

extension ServerStore {
    /// Whether the replica of `home`'s chain has its node's chain-state digest,
    /// each at its latest observation.
    func replicaMatches(_ home: ArchiveHome, clock: ManualClock) async throws -> Bool {
        let node = try home.open(mode: .readOnly, clock: clock)
        return try await Self.digestsMatch(node, try Archive.open(path: replicaPath(node.deviceChainHash), mode: .readOnly))
    }

    /// Whether `replica` has `node`'s chain-state digest, each at its latest observation.
    static func digestsMatch(_ node: NodeArchive, _ replica: Archive) async throws -> Bool {
        let nodeObs = try await node.archive.unsafeBenchmarkAccess.read { db in try Int64.fetchOne(db, sql: "SELECT max(id) FROM observations")! }
        let replicaObs = try await replica.unsafeBenchmarkAccess.read { db in try Int64.fetchOne(db, sql: "SELECT max(id) FROM observations")! }
        let a = try await node.archive.chainState(observation: nodeObs)
        let b = try await replica.chainState(observation: replicaObs)
        return a == b
    }
}
