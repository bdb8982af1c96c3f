import ArgumentParser
import HealthProbeArchive
import HealthProbeCLI
import HealthProbeServer

struct ServerCompact: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "compact",
        abstract: "Return each replica's free pages to the disk (SQLite VACUUM); the server must be stopped.",
        discussion: """
            A schema upgrade that rebuilds tables leaves their old pages in each replica as free pages. Each replica in \
            turn is copied into a temporary file (in $SQLITE_TMPDIR, else $TMPDIR, else /var/tmp) and written back \
            through its write-ahead log, in one transaction: interrupted, a replica stays as it was. The free disk \
            for both copies is checked first; afterwards each replica's row counts and its latest chain-state \
            digest are compared with before. With under 1% of the pages (or under 64 pages) free, it does nothing.
            """)
    @OptionGroup var options: DataOptions
    @Option(name: .long, help: "Only this chain (hash or unique prefix).") var chain: String?

    func run() async throws {
        let store = options.store
        try store.requireInitialized()
        let json = options.json
        let progress = ProgressLine(label: "compacting", enabled: Output.stdoutIsTerminal && !json)
        let reports = try ReplicaCompaction.run(store, chain: chain, onMigration: { chain, from, to in
            Output.err("hp-server: migrating the replica of chain \(chain.prefix(16)) from schema \(from) to \(to) first")
        }, step: { chain, step in
            progress.step("chain \(chain.prefix(16)): \(CompactionText.step(step))")
        }) { r in
            progress.finish()
            if !json { print(CompactionText.line(r.report, name: "chain \(r.chain.prefix(16))")) }
        }
        if json { try Output.json(reports) } else if reports.isEmpty { print("no chains") }
    }
}
