import ArgumentParser
import Foundation
import Synchronization
import HealthProbeArchive
import HealthProbeCLI
import UnixSignals
#if canImport(Glibc)
import Glibc
#endif

/// Set by SIGINT while an export runs; the exporter polls it between items.
final class CancelFlag: Sendable {
    private let value = Mutex(false)
    func set() { value.withLock { $0 = true } }
    var isSet: Bool { value.withLock { $0 } }
}

struct Export: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Write a recovery-compatible export (JSON or CSV) with item and manifest hashes.",
        discussion: "Kinds: \(ExportKind.allCases.map(\.rawValue).joined(separator: ", ")). Ctrl-C cancels: no file is left and the export is recorded as cancelled.")

    @OptionGroup var options: HomeOptions
    @Option(name: .long, help: "Export kind.") var kind: String
    @Option(name: .long, help: "The observation whose visible state is exported (default: the latest).") var at: Int64?
    @Option(name: .long, help: "Diff: the earlier observation.") var from: Int64?
    @Option(name: .long, help: "Diff: the later observation.") var to: Int64?
    @Option(name: .long, help: "Only this sample type (repeatable).") var type: [String] = []
    @Option(name: .long, help: "Start dates from (UTC, inclusive).") var dateFrom: String?
    @Option(name: .long, help: "Start dates to (UTC, exclusive).") var dateTo: String?
    @Option(name: .long, help: "Visibility fields consider observations up to this one (default: the latest); reproduces an earlier export.") var asOf: Int64?
    @Flag(name: .long, help: "Leave relationships out.") var noRelationships = false
    @Flag(name: .long, help: "Include each record's metadata object (may hold personal detail).") var includeMetadata = false
    @Option(name: .long, help: "Output file (written as FILE.partial, renamed when complete).") var out: String
    @Flag(name: .long, help: "Replace an existing output file.") var overwrite = false

    func validate() throws {
        guard let k = ExportKind(rawValue: kind) else {
            throw ValidationError("--kind \(kind): expected one of \(ExportKind.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        if k == .observationDiffJSON {
            guard from != nil, to != nil else { throw ValidationError("--kind observation_diff_json needs --from A --to B") }
            if at != nil { throw ValidationError("--at does not apply to a diff; use --from and --to") }
        } else if from != nil || to != nil {
            throw ValidationError("--from/--to apply only to --kind observation_diff_json; use --at OBS")
        }
        if let dateFrom { _ = try parseDate(dateFrom, option: "--date-from") }
        if let dateTo { _ = try parseDate(dateTo, option: "--date-to") }
    }

    func run() async throws {
        var asked = ExportRequest(kind: ExportKind(rawValue: kind)!)
        asked.at = at; asked.from = from; asked.to = to; asked.types = type; asked.asOf = asOf
        asked.dateFrom = try dateFrom.map { try parseDate($0, option: "--date-from") }
        asked.dateTo = try dateTo.map { try parseDate($0, option: "--date-to") }
        asked.includeRelationships = !noRelationships
        asked.includeMetadata = includeMetadata
        let request = asked
        let node = try options.open()
        Output.err("note: " + ProvenanceWarning.text)
        // Ctrl-C sets the flag the exporter polls between items. The sequence is awaited
        // until its handler is registered, so a signal that comes at once is not lost.
        let flag = CancelFlag()
        let interrupts = await UnixSignalsSequence(trapping: .sigint)
        defer { signal(SIGINT, SIG_DFL) }
        let showProgress = Output.stdoutIsTerminal && !options.json
        let result: ExportResult
        do {
            result = try await withThrowingTaskGroup(of: ExportResult?.self) { group in
                group.addTask {
                    for await _ in interrupts { flag.set() }
                    return nil
                }
                group.addTask {
                    try await StageThread.run(name: "export") {
                        let progress = ProgressLine(label: "export", enabled: showProgress)
                        defer { progress.finish() }
                        return try Exporter.run(node: node, request: request, out: out, overwrite: overwrite,
                                                isCancelled: { flag.isSet }, progress: { progress.update(done: $0, total: nil, unit: "items") })
                    }
                }
                defer { group.cancelAll() }
                while let next = try await group.next() {
                    if let done = next { return done }
                }
                throw ArchiveError(.cancelled, "the export ended without a result")
            }
        } catch let e as ArchiveError where e.code == .cancelled {
            Output.err("export cancelled: no file was written")
            throw JSONFailure.exiting(130, code: "cancelled", message: "export cancelled: no file was written", json: options.json)
        }
        if options.json { try Output.json(result); return }
        print("export      \(result.exportID) (\(result.kind.rawValue))")
        print("file        \(result.path)")
        for c in result.companionPaths { print("            \(c)") }
        print("items       \(result.recordCount)")
        print("manifest    \(result.manifestHash)")
    }
}

struct VerifyExport: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "verify-export",
        abstract: "Recompute every item hash and the manifest hash of an export from its file(s) alone.")

    @OptionGroup var options: HomeOptions
    @Argument(help: "The export file (for CSV, the records file; FILE.manifest.json must be next to it).") var file: String
    @Flag(name: .long, help: "Parse and re-encode every item (slower); by default items are parsed only when their hash does not match.") var strict = false

    func run() async throws {
        let report = try ExportVerifier.verify(path: file, strict: strict)
        if options.json { try Output.json(report) } else {
            print("\(report.ok ? "ok" : "FAILED")  \(report.kind ?? "?") \(report.exportID ?? "?"): \(report.items) items, format \(report.formatVersion.map(String.init) ?? "?"), manifest \(report.manifestHash ?? "-")")
            for p in report.problems.prefix(50) { print("  \(p)") }
            if report.problems.count > 50 { print("  ... and \(report.problems.count - 50) more") }
        }
        if !report.ok { throw ExitCode(1) }
    }
}
