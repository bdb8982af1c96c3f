import ArgumentParser
import HealthProbeArchive
import HealthProbeCLI

struct Compact: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Return the archive's free pages to the disk (SQLite VACUUM).",
        discussion: """
            A schema upgrade that rebuilds tables leaves their old pages in the file as free pages; later writes reuse \
            them, but the file does not shrink. This copies the archive into a temporary file (in $SQLITE_TMPDIR, else \
            $TMPDIR, else /var/tmp) and writes it back through the write-ahead log, in one transaction: interrupted, the \
            archive stays as it was. It needs free disk for both copies (checked first) and the archive to itself \
            (no capture, import or sync at the same time). Afterwards every table's row count and the latest \
            observation's chain-state digest are compared with before. With under 1% of the pages (or under 64 pages) free, it does nothing.
            """)

    @OptionGroup var options: HomeOptions

    func run() async throws {
        let home = options.resolvedHome
        guard home.archiveExists else {
            throw ArchiveError(.notFound, "no archive in \(home.root); nothing to compact")
        }
        let node = try options.open()
        let progress = ProgressLine(label: "compacting", enabled: Output.stdoutIsTerminal && !options.json)
        let report = try ArchiveCompaction.run(node.archive, step: { progress.step(CompactionText.step($0)) })
        progress.finish()
        if options.json { try Output.json(report); return }
        print(CompactionText.line(report, name: home.archivePath))
    }
}
