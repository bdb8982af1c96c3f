import ArgumentParser
import Foundation
import HealthProbeArchive
import HealthProbeCLI
import HealthProbeImport

struct Import: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Import an Apple Health export as one observation.",
        discussion: """
            PATH is export.zip, export.xml (any name) or the unzipped export folder. Every sample type is a
            full-scan run: what was visible before and is missing now is recorded as disappeared. Malformed
            elements are skipped and reported with line and column; the observation then ends needs_review and
            nothing of their type is marked disappeared (exit status 3). A corrupt or truncated file fails with
            exit status 1 and leaves the archive exactly as before.
            """)

    @OptionGroup var options: HomeOptions

    @Argument(help: "export.zip, export.xml, or the unzipped export folder.")
    var path: String

    @Option(name: .long, help: "Samples per page (one transaction each).")
    var pageSize: Int = 5000

    func validate() throws {
        guard (1...100_000).contains(pageSize) else { throw ValidationError("--page-size must be between 1 and 100000") }
    }

    func run() async throws {
        let node = try options.open()
        var o = AppleHealthImporter.Options()
        o.pageSize = pageSize
        let importer = AppleHealthImporter(node: node, options: o, logger: NodeLogging.logger())
        let progress = ProgressLine(label: "importing")
        importer.onProgress = { bytes, total, records in
            progress.update(done: records, total: nil, unit: "records", fraction: total.map { Double(bytes) / Double(max($0, 1)) })
        }
        let r: AppleHealthImporter.Result
        do {
            r = try importer.importExport(at: path)
            progress.finish()
        } catch {
            progress.finish()
            throw error
        }
        if options.json {
            try Output.json(r)
        } else {
            print("observation \(r.observationId): \(r.status), \(r.records) records of \(r.types) types from \(r.source) in \(String(format: "%.1f", r.seconds)) s")
            if r.noChanges {
                print("no changes since the previous import: nothing appeared, changed or disappeared")
            } else {
                print("appeared \(r.appeared), changed \(r.changed), disappeared \(r.disappeared), unchanged \(r.unchanged)")
            }
            if r.relationships > 0 { print("new relationships \(r.relationships)") }
            if r.controlCharactersReplaced > 0 { print("stray control characters replaced: \(r.controlCharactersReplaced)") }
            if r.rejected > 0 {
                print("rejected \(r.rejected) malformed element(s); nothing of their types was marked disappeared:")
                for x in r.rejections { print("  line \(x.line), column \(x.column): <\(x.element)>\(x.typeIdentifier.map { " \($0)" } ?? ""): \(x.reason)") }
                if r.rejections.count < r.rejected { print("  ... and \(r.rejected - r.rejections.count) more") }
            }
        }
        if r.rejected > 0 { throw ExitCode(3) }
    }
}
