import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A real S3-compatible server: SeaweedFS (`.venv/bin/weed server -s3`, made by
/// `scripts/venv`) on free loopback ports with its data in a temporary directory and
/// one identity (`accessKey`, `secretKey`). Stopped (SIGKILL) when released.
public final class SeaweedS3: @unchecked Sendable {
    /// `.venv/bin/weed` in the repository.
    public static let binary = repositoryRoot.appendingPathComponent(".venv/bin/weed").path
    public static var available: Bool { FileManager.default.isExecutableFile(atPath: binary) }
    public static let skipReason = "needs .venv/bin/weed (SeaweedFS, a real S3-compatible server): run scripts/venv"

    public let accessKey = "hp-test-access"
    public let secretKey = "hp-test-secret-0123456789"
    public let directory = TempDir()
    public private(set) var process: Process?
    /// Ports: master, master gRPC, volume, volume gRPC, filer, filer gRPC, S3, S3 gRPC.
    private(set) var ports: [Int]
    public var endpoint: String { "http://127.0.0.1:\(ports[6])" }

    public init() throws {
        ports = try freeLoopbackPorts(8)
        let config = #"{"identities":[{"name":"healthprobe","credentials":[{"accessKey":"\#(accessKey)","secretKey":"\#(secretKey)"}],"actions":["Admin","Read","Write","List","Tagging"]}]}"#
        try config.write(toFile: directory.file("s3.json"), atomically: true, encoding: .utf8)
        // A port free when chosen can be bound by another process before weed binds it; the
        // start then fails saying so, and starts again on new ports with its data removed.
        var attempt = 1
        while true {
            do { try start(); return } catch let error as SeaweedDidNotStart where attempt < 3 && error.log.contains("address already in use") {
                attempt += 1
                ports = try freeLoopbackPorts(8)
                try? FileManager.default.removeItem(atPath: directory.file("data"))
            }
        }
    }

    /// Starts the server (again, after `stop`, on the same ports and data) and waits until S3 answers.
    public func start(timeout: Double = 90) throws {
        try FileManager.default.createDirectory(atPath: directory.file("data"), withIntermediateDirectories: true)
        let p = Process()
        p.executableURL = URL(fileURLWithPath: Self.binary)
        p.arguments = ["server", "-dir=\(directory.file("data"))", "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
                       "-master.port=\(ports[0])", "-master.port.grpc=\(ports[1])", "-volume.port=\(ports[2])", "-volume.port.grpc=\(ports[3])",
                       "-master.volumeSizeLimitMB=256", "-volume.max=32",
                       "-filer", "-filer.port=\(ports[4])", "-filer.port.grpc=\(ports[5])",
                       "-s3", "-s3.port=\(ports[6])", "-s3.port.grpc=\(ports[7])", "-s3.port.iceberg=0", "-s3.port.lance=0",
                       "-s3.config=\(directory.file("s3.json"))"]
        let log = directory.file("weed.log")
        if !FileManager.default.fileExists(atPath: log) { _ = FileManager.default.createFile(atPath: log, contents: nil) }
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: log))
        let logStart = Int(handle.seekToEndOfFile())
        p.standardOutput = handle
        p.standardError = handle
        try p.run()
        process = p
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            guard p.isRunning else { break }
            if Self.answers(port: ports[6]) { usleep(500_000); return }
            usleep(200_000)
        }
        // What this start wrote (an earlier start's lines stay before it).
        let written = (FileManager.default.contents(atPath: log) ?? Data()).dropFirst(logStart)
        let text = String(decoding: written, as: UTF8.self)
        stop()
        throw SeaweedDidNotStart(log: String(text.suffix(1500)))
    }

    /// Kills the server (the object store goes down); `start` brings it back with its data.
    public func stop() {
        guard let p = process else { return }
        if p.isRunning { kill(p.processIdentifier, SIGKILL) }
        p.waitUntilExit()
        process = nil
    }

    deinit { stop() }

    /// The last `characters` of the server's own log (every start appends to it): what a failed
    /// test prints, so a store that stopped taking requests says why.
    public func logTail(_ characters: Int = 6000) -> String {
        let text = (try? String(contentsOfFile: directory.file("weed.log"), encoding: .utf8)) ?? "(no log)"
        return String(text.suffix(characters))
    }

    /// Whether something answers HTTP on the port (any status).
    static func answers(port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = in_port_t(UInt16(port).bigEndian)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        guard connected == 0 else { return false }
        let request = "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
        _ = request.withCString { send(fd, $0, strlen($0), 0) }
        var timeout = timeval(tv_sec: 2, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var buffer = [UInt8](repeating: 0, count: 64)
        let n = recv(fd, &buffer, buffer.count, 0)
        return n > 0 && String(decoding: buffer[0..<n], as: UTF8.self).hasPrefix("HTTP/1.1 ")
    }
}

/// `count` distinct loopback ports free a moment ago: each socket stays bound until all are
/// chosen (ports taken one at a time and released at once can repeat; a store whose S3 port
/// was also its volume server's answered the S3 requests from the wrong server).
///
/// They are chosen below the kernel's ephemeral range (`ip_local_port_range`), so the port a
/// test server is given is never the one the kernel hands the next `bind(0)` or outgoing
/// connection of another test running beside it (a store once failed to start with "address
/// already in use" for that reason). Where that range leaves no room or cannot be read (no
/// `/proc`), the kernel chooses.
public func freeLoopbackPorts(_ count: Int) throws -> [Int] {
    var fds: [Int32] = []
    defer { for fd in fds { close(fd) } }
    var ports: [Int] = []
    var below = belowEphemeralPorts()
    var tries = 0
    while ports.count < count {
        var candidate = 0
        if let range = below, range.count >= count * 4 {
            tries += 1
            if tries > count * 20 { below = nil; continue }
            candidate = Int.random(in: range)
            if ports.contains(candidate) { continue }
        }
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw SeaweedDidNotStart(log: "no socket for a free loopback port (errno \(errno))") }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = in_port_t(UInt16(candidate).bigEndian)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        if bound != 0 && candidate != 0 { close(fd); continue }  // taken: another candidate
        fds.append(fd)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        guard bound == 0, withUnsafeMutablePointer(to: &addr, { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }) == 0 else {
            throw SeaweedDidNotStart(log: "no free loopback port (errno \(errno))")
        }
        ports.append(Int(UInt16(bigEndian: addr.sin_port)))
    }
    return ports
}

/// Ports from 10000 up to the start of the kernel's ephemeral range, or nil when it cannot be
/// read or starts too low to leave room.
public func belowEphemeralPorts() -> ClosedRange<Int>? {
    guard let text = try? String(contentsOfFile: "/proc/sys/net/ipv4/ip_local_port_range", encoding: .utf8),
          let low = text.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\n" }).first.flatMap({ Int($0) }),
          low > 10_000 + 1 else { return nil }
    return 10_000...(low - 1)
}

/// SeaweedFS did not answer S3 in time.
public struct SeaweedDidNotStart: Error, CustomStringConvertible {
    public let log: String
    public var description: String { "weed server -s3 did not answer: \(log)" }
}
