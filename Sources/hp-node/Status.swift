import ArgumentParser
import HealthProbeArchive
import HealthProbeCLI

struct Status: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Show the archive's state.")

    @OptionGroup var options: HomeOptions

    func run() async throws {
        let home = options.resolvedHome
        let node = try options.open(.readOnly)
        let s = try await node.archive.writer.read { db in try ObservationQueries.status(db, chainID: node.deviceChainID) }
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
