import Foundation
import Testing

/// The package's one concurrency model, checked over `Sources/`: blocking work runs on
/// a `StageThread` (the stages, `StageThread.run`) or on NIO's thread pool, so threads,
/// Dispatch queues and groups, semaphores and conditions are made in the stage files
/// only; and every `@unchecked Sendable` says, in the comment right above it, which
/// lock or which immutability makes it safe.
@Suite("One concurrency model")
struct ConcurrencyRuleTests {
    /// The files that may make threads and wait on conditions: the stage type's.
    static let stageFiles: Set<String> = [
        "HealthProbeArchive/Support/StageThread.swift",
        "HealthProbeArchive/Support/BoundedQueue.swift",
    ]

    /// Declarations whose reason is still to be written: each must lack one (else drop it here).
    static let awaitingReason: Set<String> = []

    /// What makes a thread or a way of waiting of its own.
    static let primitives = [
        #"\bThread\s*[({]"#, #"\bThread\.detachNewThread"#, #"\bpthread_create\b"#,
        #"\bDispatchQueue\s*\("#, #"\bDispatchQueue\.global\s*\("#, #"\bDispatchGroup\s*\("#,
        #"\bDispatchSemaphore\s*\("#, #"\bDispatchSource\.makeTimerSource"#,
        // Signals arrive through swift-service-lifecycle's `UnixSignalsSequence` (awaited until registered).
        #"\bDispatchSource\.makeSignalSource"#, #"\bsigaction\s*\("#,
        // A handler of its own (`signal(SIGINT, f)`); setting a default or ignoring one is fine.
        #"\bsignal\s*\(\s*SIG[A-Z0-9]+\s*,(?!\s*(SIG_DFL|SIG_IGN)\s*\))"#,
        #"\bNSCondition\s*\("#, #"\bNSConditionLock\s*\("#,
    ]

    struct Finding: CustomStringConvertible, Equatable {
        let file: String, line: Int, text: String, problem: String
        var description: String { "\(file):\(line): \(problem): \(text)" }
    }

    /// The findings in one source file (`file` relative to `Sources/`).
    static func findings(in source: String, file: String) -> [Finding] {
        let lines = source.components(separatedBy: "\n")
        let primitives = Self.primitives.compactMap { try? Regex($0) }
        var out: [Finding] = []
        for (i, raw) in lines.enumerated() {
            let line = raw.trimmingCharacters(in: .whitespaces)
            if line.hasPrefix("//") { continue }
            let code = line.components(separatedBy: "//").first ?? line
            if !stageFiles.contains(file), primitives.contains(where: { code.contains($0) }) {
                out.append(Finding(file: file, line: i + 1, text: line, problem: "a thread or wait of its own outside the stage files (use ProducerStage, ConsumerStage, StageThread or NIOThreadPool)"))
            }
            guard code.contains("@unchecked Sendable") else { continue }
            // The comment block right above (attributes skipped) must give the reason.
            var j = i - 1, reason = false
            while j >= 0 {
                let above = lines[j].trimmingCharacters(in: .whitespaces)
                if above.hasPrefix("@") { j -= 1; continue }
                guard above.hasPrefix("//") else { break }
                if let r = above.range(of: "`@unchecked Sendable`:"), !above[r.upperBound...].trimmingCharacters(in: .whitespaces).isEmpty { reason = true }
                j -= 1
            }
            let key = "\(file): \(line)"
            if awaitingReason.contains(key) {
                if reason { out.append(Finding(file: file, line: i + 1, text: line, problem: "its reason is written now: drop it from `awaitingReason`")) }
            } else if !reason {
                out.append(Finding(file: file, line: i + 1, text: line, problem: "no \"`@unchecked Sendable`: <the lock or the immutability>\" comment right above it"))
            }
        }
        return out
    }

    static var sources: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Sources")
    }

    /// Every Swift file under `Sources/`, relative path and text.
    static func sourceFiles() throws -> [(String, String)] {
        let root = sources.standardizedFileURL.path
        guard let walker = FileManager.default.enumerator(atPath: root) else { return [] }
        var files: [(String, String)] = []
        while let path = walker.nextObject() as? String {
            guard path.hasSuffix(".swift") else { continue }
            files.append((path, try String(contentsOfFile: root + "/" + path, encoding: .utf8)))
        }
        return files.sorted { $0.0 < $1.0 }
    }

    @Test("Sources/ makes threads and waits only in the stage files, installs no signal handler of its own (UnixSignalsSequence only), and every @unchecked Sendable gives its reason")
    func sourcesFollowTheRule() throws {
        let files = try Self.sourceFiles()
        #expect(files.count > 100, "Sources/ was not found at \(Self.sources.path)")
        let findings = files.flatMap { Self.findings(in: $0.1, file: $0.0) }
        #expect(findings.isEmpty, "\(findings.count) finding(s):\n\(findings.map(\.description).joined(separator: "\n"))")
        let unchecked = files.reduce(0) { n, f in
            n + f.1.components(separatedBy: "\n").filter { l in
                let t = l.trimmingCharacters(in: .whitespaces)
                return !t.hasPrefix("//") && t.contains("@unchecked Sendable")
            }.count
        }
        // Fewer is welcome (lower the bound); more needs a reason each, and a look.
        #expect(unchecked <= 10, "\(unchecked) @unchecked Sendable declarations in Sources/")
    }

    @Test("the check finds a thread, a wait or a signal handler outside the stage files and an @unchecked Sendable without its reason")
    func checkFindsViolations() {
        let source = """
            import Foundation

            /// A box.
            final class Box: @unchecked Sendable {
                let q = DispatchQueue(label: "x")
                let t = Thread { }
                let s = DispatchSource.makeSignalSource(signal: SIGINT)
                let h = signal(SIGTERM, onTerm)
                // DispatchSemaphore(value: 0) in a comment is fine
                let back = signal(SIGPIPE, SIG_IGN)
            }

            /// `@unchecked Sendable`: `n` is read and written only under `lock`.
            final class Counted: @unchecked Sendable {}

            /// `@unchecked Sendable`:
            final class Empty: @unchecked Sendable {}
            let s = StageThread(name: "ok") {}
            """
        let found = Self.findings(in: source, file: "Some/File.swift")
        #expect(found.map(\.line) == [4, 5, 6, 7, 8, 17])
        #expect(Self.findings(in: source, file: "HealthProbeArchive/Support/StageThread.swift").map(\.line) == [4, 17])
    }
}
