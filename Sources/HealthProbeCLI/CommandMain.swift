import ArgumentParser
import Foundation
import HealthProbeArchive
import HealthProbeCanonical

/// An executable's `main`: the process's settings first (`ProcessSettings`), before any
/// thread or connection exists, then the command line parsed and run as
/// swift-argument-parser's own `main` does.
public enum CommandMain {
    public static func run<Root: AsyncParsableCommand>(_ root: Root.Type) async {
        ProcessSettings.apply()
        do {
            var command = try root.parseAsRoot()
            if var asyncCommand = command as? AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch {
            if let failure = JSONFailure(error, root: root, arguments: Array(CommandLine.arguments.dropFirst())) { failure.write() }
            root.exit(withError: error)
        }
    }
}

/// A failed command's error as JSON on stdout, for a command line with `--json`:
/// tools then read one JSON document whether the command worked or not. The text
/// goes to stderr as without `--json`; the exit status is the same.
public struct JSONFailure: Encodable, Equatable {
    struct Detail: Encodable, Equatable {
        /// The error's stable code (`not_found`, `unauthorized`...), null when it has none;
        /// `validation` for a command line refused by the parser or the command's own checks (exit status 64).
        let code: String?
        let message: String
        let exitCode: Int32

        enum CodingKeys: String, CodingKey { case code, message, exitCode = "exit_code" }

        func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(code, forKey: .code)  // null when none: the member is always there
            try c.encode(message, forKey: .message)
            try c.encode(exitCode, forKey: .exitCode)
        }
    }
    let error: Detail

    /// Nil when `arguments` (without the executable) ask for no JSON before a `--`, or when
    /// the command printed its own result already: a check that found problems exits
    /// non-zero (`ExitCode`), as do help and `--version` (zero).
    init?<Root: ParsableCommand>(_ error: any Error, root: Root.Type, arguments: [String]) {
        guard arguments.prefix(while: { $0 != "--" }).contains("--json"), !(error is ExitCode) else { return nil }
        let exit = root.exitCode(for: error)
        guard !exit.isSuccess else { return nil }
        let code = (error as? any CodedError)?.codeName ?? (exit == .validationFailure ? "validation" : nil)
        self.error = Detail(code: code, message: root.message(for: error), exitCode: exit.rawValue)
    }

    init(code: String?, message: String, exitCode: Int32) {
        error = Detail(code: code, message: message, exitCode: exitCode)
    }

    /// For a command that ends itself with `ExitCode(status)` after saying why on stderr
    /// (an interrupted export: 130): the same JSON line, when the command line has `--json`.
    public static func exiting(_ status: Int32, code: String, message: String, json: Bool) -> ExitCode {
        if json { JSONFailure(code: code, message: message, exitCode: status).write() }
        return ExitCode(status)
    }

    /// One line of JSON on stdout (also a line of a command's JSON Lines output), written with
    /// the throwing `write(contentsOf:)`: a stdout that is closed, full or a closed pipe loses
    /// it, never the error text on stderr that follows, nor the exit status.
    func write() {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        guard let data = try? encoder.encode(self) else { return }
        signal(SIGPIPE, SIG_IGN)
        try? FileHandle.standardOutput.write(contentsOf: data + Data("\n".utf8))
    }
}
