import Foundation
import Testing

/// The built executable `name` (`hp-node`, `hp-server`): the test targets that run it
/// declare it as a dependency, so SwiftPM builds it beside the test bundle.
public func toolURL(_ name: String) throws -> URL {
    let exe = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent().appendingPathComponent(name)
    guard FileManager.default.isExecutableFile(atPath: exe.path) else {
        throw ToolMissing(path: exe.path)
    }
    return exe
}

/// A CLI the tests need was not built beside the test bundle.
public struct ToolMissing: Error, CustomStringConvertible {
    public let path: String
    public var description: String { "\(path) is not built: declare its executable target as a dependency of the test target" }
}

/// Runs a built tool with `args`; returns (status, stdout, stderr).
/// `stdin`, when given, is written to its standard input, which is then closed.
public func runTool(_ name: String, _ args: [String], stdin: String? = nil) throws -> (Int32, String, String) {
    let p = Process()
    p.executableURL = try toolURL(name)
    p.arguments = args
    let out = Pipe(), err = Pipe()
    p.standardOutput = out
    p.standardError = err
    let input = stdin.map { _ in Pipe() }
    if let input { p.standardInput = input }
    try p.run()
    if let input, let stdin {
        input.fileHandleForWriting.write(Data(stdin.utf8))
        try input.fileHandleForWriting.close()
    }
    // Read both pipes at once: a tool that fills stderr while we wait on stdout would otherwise block.
    let group = DispatchGroup()
    nonisolated(unsafe) var e = Data()
    group.enter()
    DispatchQueue.global().async {
        e = err.fileHandleForReading.readDataToEndOfFile()
        group.leave()
    }
    let o = out.fileHandleForReading.readDataToEndOfFile()
    group.wait()
    p.waitUntilExit()
    return (p.terminationStatus, String(decoding: o, as: UTF8.self), String(decoding: e, as: UTF8.self))
}

/// Starts a built tool with `args` and its output discarded, without waiting: for
/// tests that signal it while it works. `environment` is added to this process's.
public func launchTool(_ name: String, _ args: [String], environment: [String: String] = [:]) throws -> Process {
    let p = Process()
    p.executableURL = try toolURL(name)
    p.arguments = args
    if !environment.isEmpty { p.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 } }
    p.standardOutput = FileHandle.nullDevice
    p.standardError = FileHandle.nullDevice
    try p.run()
    return p
}

/// Runs the built `hp-node`.
public func hpNode(_ args: [String]) throws -> (Int32, String, String) { try runTool("hp-node", args) }

/// Runs the built `hp-server`.
public func hpServer(_ args: [String]) throws -> (Int32, String, String) { try runTool("hp-server", args) }

/// Enrolls the node at `home` with the server at `data` (listening on `port`) through both CLIs.
public func enrollWithCLI(data: String, home: String, name: String, port: Int) throws {
    let issued = try hpServer(["enroll", "--data", data, "--name", name, "--address", "127.0.0.1:\(port)"])
    #expect(issued.0 == 0, "\(issued.2)")
    let enrolled = try hpNode(["--home", home, "enroll", issued.1.trimmingCharacters(in: .whitespacesAndNewlines)])
    #expect(enrolled.0 == 0, "\(enrolled.2)")
}
