import ArgumentParser
import HealthProbeArchive
import HealthProbeCLI
import HealthProbeSimulator

struct Capture: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Capture one observation.",
        discussion: "With --simulate, continues a deterministic synthetic person's timeline by one capture (same seed, same history).")

    @OptionGroup var options: HomeOptions

    @Flag(name: .long, help: "Capture from the deterministic HealthKit simulator.")
    var simulate = false

    @Option(name: .long, help: "Simulator seed (a non-negative integer).")
    var seed: UInt64 = 1

    @Option(name: .long, help: "Simulated days this capture advances the timeline by.")
    var days: Int = 1

    @Flag(name: .long, help: "Use full-scan type runs instead of anchored ones.")
    var fullScan = false

    func validate() throws {
        guard simulate else { throw ValidationError("only simulated captures exist so far: pass --simulate (Apple Health exports: `hp-node import`)") }
        guard (1...3650).contains(days) else { throw ValidationError("--days must be between 1 and 3650, got \(days)") }
    }

    struct Result: Codable {
        var observationId: Int64
        var status: String
        var throughDay: Int
        var runs: [Run]
        struct Run: Codable {
            var type: String
            var status: String
            var insertedEvents: Int
            var deletedEvents: Int
            var visible: Int?
        }
    }

    func run() async throws {
        var o = SimulatorCapture.Options()
        o.seed = seed
        o.days = days
        o.fullScan = fullScan
        let outcome = try SimulatorCapture.run(home: options.resolvedHome, options: o, logger: NodeLogging.logger())
        let r = Result(observationId: outcome.observationID, status: outcome.status.rawValue, throughDay: outcome.throughDay,
                       runs: outcome.runs.map { .init(type: $0.typeIdentifier, status: $0.status.rawValue, insertedEvents: $0.insertedEvents,
                                                      deletedEvents: $0.deletedEvents, visible: $0.visibleCount) })
        if options.json { try Output.json(r); return }
        print("observation \(r.observationId): \(r.status) (simulated day \(r.throughDay))")
        var t = TextTable(["type", "run", "added/changed", "removed", "visible"], rightAligned: [2, 3, 4])
        for run in r.runs {
            t.add([TypeCatalogue.name(run.type), run.status, String(run.insertedEvents), String(run.deletedEvents), run.visible.map(String.init) ?? "-"])
        }
        print(t.render())
    }
}
