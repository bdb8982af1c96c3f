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
        let storage = try await node.archive.storage()
        if options.json { try Output.json(StatusOutput(status: s, storage: storage)); return }
        print("archive           \(home.archivePath)")
        print("schema version    \(s.schemaVersion)")
        print("device chain      \(s.deviceChainHash.prefix(16))\(s.recoveredFromKeychain ? " (recovered from the key directory)" : "")")
        print("observations      \(s.observations)")
        print("last observation  \(s.lastObservationID.map { "\($0) \(s.lastObservationStatus ?? "") at \(Output.date(s.lastObservedAt))" } ?? "-")")
        print("sample identities \(s.samples)")
        print("payload versions  \(s.versions)")
        print("visible now       \(s.visibleSamples)")
        print("events            \(s.events)")
        let free = storage.freePages == 1 ? "1 page free" : "\(storage.freePages) pages free"
        print("file              \(CompactionText.megabytes(storage.bytes)), \(storage.pages) pages, \(free)\(storage.worthCompacting ? " (`hp-node compact` returns them to the disk)" : "")")
    }
}

/// `status --json`: the cached status and, beside its fields, the file's `storage`.
struct StatusOutput: Encodable {
    var status: ObservationQueries.Status
    var storage: ArchiveCompaction.Storage

    enum Key: String, CodingKey { case storage }

    func encode(to encoder: any Encoder) throws {
        try status.encode(to: encoder)
        var c = encoder.container(keyedBy: Key.self)
        try c.encode(storage, forKey: .storage)
    }
}
