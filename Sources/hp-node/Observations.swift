import ArgumentParser
import HealthProbeArchive
import HealthProbeCLI

struct Observations: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "List observations with what each changed.")

    @OptionGroup var options: HomeOptions

    @Option(name: .long, help: "Show observations after this id (paging).")
    var after: Int64 = 0

    @Option(name: .long, help: "At most this many rows.")
    var limit: Int = 200

    func run() async throws {
        let node = try options.open(.readOnly)
        // Read from the report cache, brought up to date from the archive first.
        let cache = try ArchiveCache.of(options.resolvedHome)
        try cache.refresh(from: node)
        let rows = try cache.observations(afterID: after, limit: limit)
        if options.json { try Output.json(rows); return }
        var t = TextTable(["id", "observed at (UTC)", "status", "trigger", "types", "visible", "appeared", "disappeared", "changed", "deleted"],
                          rightAligned: [0, 4, 5, 6, 7, 8, 9])
        for r in rows {
            t.add([String(r.id), Output.date(r.observedAt), r.status, r.triggerReason, String(r.trackedTypeCount), String(r.visibleRecordCount), String(r.appeared),
                   String(r.disappeared), String(r.changed), String(r.deletedObjects)])
        }
        print(t.render())
        if rows.count == limit, let last = rows.last { print("(more: --after \(last.id))") }
    }
}
