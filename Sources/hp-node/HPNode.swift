import ArgumentParser
import HealthProbeArchive
import HealthProbeCLI

/// `hp-node`: a device node's archive, captures and sync.
@main
struct HPNode: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "hp-node",
        abstract: "Keep a differential archive of health records and show what changed.",
        version: HealthProbeVersion.current,
        subcommands: [Init.self, Import.self, Capture.self, Observations.self, Show.self, Status.self, Snapshot.self, Diff.self, Changes.self, Summary.self, Cache.self, Export.self, VerifyExport.self, Verify.self, Compact.self, Digest.self, Bundle.self, VerifyBundle.self, Enroll.self, Sync.self, Household.self, Reset.self, Restore.self, Serve.self, IngestKey.self]
    )

    /// Accepts `hp-node --home DIR <command>`; subcommands share the same group.
    @OptionGroup var options: HomeOptions

    /// The process's settings first, then the command (`CommandMain`).
    static func main() async { await CommandMain.run(Self.self) }
}

/// Options every `hp-node` command takes.
struct HomeOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("The node's home directory (archive and keys).", discussion: "Default: $HP_HOME, else $XDG_DATA_HOME/healthprobe, else ~/.local/share/healthprobe."))
    var home: String?

    @Flag(name: .long, help: "Print JSON for tools instead of tables.")
    var json = false

    var resolvedHome: ArchiveHome { ArchiveHome.resolve(explicit: home) }

    /// Opens the node archive with the command-line logger.
    func open(_ mode: Archive.Mode = .readWrite) throws -> NodeArchive {
        try resolvedHome.open(mode: mode, logger: NodeLogging.logger()) { from, to in
            Output.err("hp-node: migrating the archive from schema \(from) to \(to); on a large archive this can take a while and needs free disk of up to the archive's size")
        }
    }
}
