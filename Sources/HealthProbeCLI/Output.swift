import Foundation
import HealthProbeArchive
import HealthProbeCanonical
#if canImport(Glibc)
import Glibc
#endif

/// Writing command output: JSON for tools, progress only on terminals.
public enum Output {
    /// Pretty, key-sorted JSON of `value` on stdout.
    public static func json<T: Encodable>(_ value: T) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        encoder.keyEncodingStrategy = .convertToSnakeCase
        let data = try encoder.encode(value)
        FileHandle.standardOutput.write(data)
        FileHandle.standardOutput.write(Data("\n".utf8))
    }

    /// One-line JSON (JSON Lines) of `value` on stdout.
    public static func jsonLine<T: Encodable>(_ value: T) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.keyEncodingStrategy = .convertToSnakeCase
        FileHandle.standardOutput.write(try encoder.encode(value))
        FileHandle.standardOutput.write(Data("\n".utf8))
    }

    /// True when stdout is a terminal.
    public static var stdoutIsTerminal: Bool { isatty(STDOUT_FILENO) == 1 }

    /// Writes to stderr.
    public static func err(_ text: String) {
        FileHandle.standardError.write(Data((text + "\n").utf8))
    }

    /// ISO 8601 text for a Unix time, "-" for none, "out of range" outside years 0000 to 9999
    /// (or not finite): never a trap, whatever the value.
    public static func date(_ t: Double?) -> String {
        guard let t else { return "-" }
        guard t.isFinite, printableDates.contains(t) else { return "out of range" }
        return CanonicalDate.string(t)
    }

    /// The Unix times `CanonicalDate.string` writes: 0000-01-01 up to 10000-01-01 UTC.
    static let printableDates: Range<Double> = -62_167_219_200..<253_402_300_800
}

/// A single, rewritten progress line on a terminal; silent otherwise. Safe to call from
/// concurrent tasks (a restore's chains report as they apply).
/// `@unchecked Sendable`: `last` and `shown`, the only mutable state, and the writes are under `lock`.
public final class ProgressLine: @unchecked Sendable {
    private let enabled: Bool
    private let start = Date()
    private var last = Date.distantPast
    /// Whether a line is on the terminal for `finish` to clear.
    private var shown = false
    private let label: String
    private let lock = NSLock()

    public init(label: String, enabled: Bool = Output.stdoutIsTerminal) {
        self.label = label
        self.enabled = enabled
    }

    /// Reports `done` of `total` (if known) units; `fraction` overrides the percentage (e.g. bytes read).
    public func update(done: Int, total: Int?, unit: String = "records", fraction: Double? = nil) {
        guard enabled else { return }
        lock.lock()
        defer { lock.unlock() }
        let now = Date()
        guard now.timeIntervalSince(last) >= 0.2 else { return }
        last = now
        let elapsed = now.timeIntervalSince(start)
        let rate = elapsed > 0 ? Double(done) / elapsed : 0
        var text = "\(label): \(done) \(unit), \(Int(rate)) \(unit)/s"
        if let f = fraction ?? total.map({ Double(done) / Double(max($0, 1)) }), f > 0 {
            let eta = elapsed / f - elapsed
            text += String(format: ", %.1f%%, ETA %.0fs", min(f, 1) * 100, max(eta, 0))
        }
        FileHandle.standardOutput.write(Data(("\r\u{1B}[K" + text).utf8))
        shown = true
    }

    /// Shows `text` after the label and the seconds so far (a step without counts).
    public func step(_ text: String) {
        guard enabled else { return }
        lock.lock()
        defer { lock.unlock() }
        let elapsed = Date().timeIntervalSince(start)
        FileHandle.standardOutput.write(Data(("\r\u{1B}[K" + String(format: "%@: %@ (%.0fs)", label, text, elapsed)).utf8))
        shown = true
    }

    /// Clears the line, if one is shown (calling it again does nothing).
    public func finish() {
        guard enabled else { return }
        lock.lock()
        defer { lock.unlock() }
        guard shown else { return }
        shown = false
        FileHandle.standardOutput.write(Data("\r\u{1B}[K".utf8))
    }
}
