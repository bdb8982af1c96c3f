import ArgumentParser
import HealthProbeArchive
import HealthProbeCLI

struct Status: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Show the archive's state.")

    @OptionGroup var options: HomeOptions

    func run() async throws {
        let home = options.resolvedHome
        let node = try options.open(.readOnly)
        // Read from the report cache, brought up to date from the archive first.
        let cache = try ArchiveCache.of(home)
        try cache.refresh(from: node)
        guard let s = try cache.status() else { throw ArchiveError(.invalidState, "the report cache has no status after a refresh; run `hp-node cache rebuild`") }
        if options.json { try Output.json(s); return }
        print("archive           \(home.archivePath)")
        print("schema version    \(s.schemaVersion)")
        print("device chain      \(s.deviceChainHash.prefix(16))\(s.recoveredFromKeychain ? " (recovered from the key directory)" : "")")
        print("observations      \(s.observations)")
        print("last observation  \(s.lastObservationID.map { "\($0) \(s.lastObservationStatus ?? "") at \(Output.date(s.lastObservedAt))" } ?? "-")")
        print("sample identities \(s.samples)")
        print("payload versions  \(s.versions)")
        print("visible now       \(s.visibleSamples)")
        print("events            \(s.events)")
    }
}
