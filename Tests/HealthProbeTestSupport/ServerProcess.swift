import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A running `hp-server serve` process on 127.0.0.1 and the port it bound.
public final class ServerProcess {
    public let process = Process()
    public let port: Int
    /// The server's stderr (its log), removed when this object goes.
    let logPath: String

    /// Starts the server and waits (at most `timeout` seconds) for the line naming its sync port.
    /// A server that exits, prints something else, or stays silent is an error, never a hang.
    /// `environment` is added to this process's for the server alone (a failpoint, say).
    public init(data: String, arguments: [String] = [], environment: [String: String] = [:], timeout: Double = 60) throws {
        process.executableURL = try toolURL("hp-server")
        // A reserve of 1 MiB: the tests' syncs never depend on how full the machine's disk is.
        process.arguments = ["serve", "--data", data, "--listen", "127.0.0.1:0", "--disk-reserve-mib", "1"] + arguments
        if !environment.isEmpty { process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 } }
        // stderr goes to a file: a pipe nobody reads would stall a server that logs a lot.
        let errPath = NSTemporaryDirectory() + "hp-server-stderr-" + UUID().uuidString
        logPath = errPath
        _ = FileManager.default.createFile(atPath: errPath, contents: nil)
        let out = Pipe()
        process.standardOutput = out
        process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: errPath))
        try process.run()
        let fd = out.fileHandleForReading.fileDescriptor
        var text = ""
        let deadline = Date().addingTimeInterval(timeout)
        var buffer = [UInt8](repeating: 0, count: 4096)
        // The sync listener's line: other services (metrics, the web pages) may announce theirs first.
        func listening() -> Substring? {
            text.split(separator: "\n").first { $0.hasPrefix("listening on ") && text.contains($0 + "\n") }
        }
        while listening() == nil {
            let left = deadline.timeIntervalSinceNow
            guard left > 0 else { break }
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&p, 1, Int32(min(left, 1) * 1000)) > 0 else { continue }
            let n = read(fd, &buffer, buffer.count)
            if n <= 0 { break }
            text += String(decoding: buffer[0..<n], as: UTF8.self)
        }
        guard let line = listening(), let p = line.split(separator: ":").last.flatMap({ Int($0.trimmingCharacters(in: .whitespaces)) }) else {
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
            process.waitUntilExit()
            let stderr = (try? String(contentsOfFile: errPath, encoding: .utf8)) ?? ""
            try? FileManager.default.removeItem(atPath: errPath)
            throw ServerDidNotStart(stdout: text, stderr: stderr, exitStatus: process.terminationStatus, signaled: process.terminationReason == .uncaughtSignal)
        }
        port = p
    }

    /// Stops the server as a supervisor does (SIGTERM: a graceful shutdown) and waits for it to exit.
    public func stop() {
        kill(process.processIdentifier, SIGTERM)
        process.waitUntilExit()
    }

    /// The last `characters` of the server's log so far (for a failure's report).
    public func logTail(_ characters: Int = 6000) -> String {
        String(((try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "").suffix(characters))
    }

    deinit {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
        try? FileManager.default.removeItem(atPath: logPath)
    }
}

/// `hp-server serve` did not report a port in time.
public struct ServerDidNotStart: Error, CustomStringConvertible {
    public let stdout: String
    public let stderr: String
    public let exitStatus: Int32
    /// Whether `exitStatus` is the number of the signal that ended it.
    public let signaled: Bool
    public var description: String { "hp-server serve reported no port (\(signaled ? "killed by signal" : "exit") \(exitStatus)); stdout: \(stdout.prefix(500)); stderr (last 4000 characters): \(stderr.suffix(4000))" }
}
