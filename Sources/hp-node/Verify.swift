import ArgumentParser
import Foundation
import GRDB
import HealthProbeArchive
import HealthProbeCLI

struct Verify: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Check the archive's integrity (exit 1 on any problem).",
        discussion: "--quick (default): SQLite quick check, schema, foreign keys, open ranges, duplicate identities, the latest aggregates. --full: also the full integrity check, every range rebuilt from events, every aggregate, every recorded export manifest reproduced, and every bundle this node sent built again to the manifest hash it was sent with.")

    @OptionGroup var options: HomeOptions
    @Flag(name: .long, help: "The quick checks (default).") var quick = false
    @Flag(name: .long, help: "Every check.") var full = false

    func validate() throws { if quick && full { throw ValidationError("choose --quick or --full, not both") } }

    func run() async throws {
        let node = try options.open(.readOnly)
        let report = try ArchiveVerifier.run(node, mode: full ? .full : .quick)
        // Remember the outcome in the report cache (archive health).
        if let cache = try? ArchiveCache.of(options.resolvedHome) {
            _ = try? cache.refresh(from: node)
            let now = node.clock.now()
            _ = try? cache.recordIntegrityCheck(at: now, ok: report.ok)
        }
        if options.json { try Output.json(report) } else {
            var t = TextTable(["check", "status", "detail"])
            for c in report.checks { t.add([c.name, c.status.rawValue, c.detail]) }
            print(t.render())
            print(report.ok ? "archive verified (\(report.mode))" : "PROBLEMS FOUND (\(report.mode))")
        }
        if !report.ok { throw ExitCode(1) }
    }
}
