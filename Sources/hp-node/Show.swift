import ArgumentParser
import HealthProbeArchive
import HealthProbeCLI

struct Show: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Show what one observation changed, per type.")

    @OptionGroup var options: HomeOptions

    @Argument(help: "Observation id (default: the latest).")
    var observation: Int64?

    func run() async throws {
        let node = try options.open(.readOnly)
        guard let found = try await node.archive.changes(chain: node.deviceChainID, observation: observation) else {
            throw ArchiveError(.notFound, "the archive has no observations yet; run `hp-node capture --simulate` or `hp-node import`")
        }
        let (id, rows) = found
        if options.json { try Output.json(rows); return }
        print("observation \(id)")
        var t = TextTable(["type", "run", "appeared", "disappeared", "changed", "deleted", "visible after"], rightAligned: [2, 3, 4, 5, 6])
        for r in rows {
            t.add([TypeCatalogue.name(r.typeIdentifier), [r.runKind, r.runStatus].compactMap { $0 }.joined(separator: " "), String(r.appeared), String(r.disappeared),
                   String(r.changed), String(r.deletedObjects), r.visibleAfter.map(String.init) ?? "-"])
        }
        print(t.render())
        let details = try await node.archive.captureDetails(observation: id)
        if let window = details.window { print(window.words) }
        let late = details.lateness.filter { $0.value >= 3600 }.sorted { $0.key < $1.key }
        if !late.isEmpty {
            print("arrived late (late, not lost): " + late.map { "\(TypeCatalogue.name($0.key)) up to \(Int(($0.value / 3600).rounded())) h after its time" }.joined(separator: "; "))
        }
    }
}
