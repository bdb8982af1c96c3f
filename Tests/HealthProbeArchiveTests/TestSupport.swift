import Foundation
import GRDB
@testable import HealthProbeArchive
@testable import HealthProbeSimulator

/// A throw-away home directory removed when the value is released.
final class TempHome {
    let root: String
    let home: ArchiveHome
    let clock = ManualClock(1_750_000_000)

    init() {
        // Before any test opens SQLite directly (the settings apply only before the first connection).
        SQLiteSetup.ensure()
        root = NSTemporaryDirectory() + "hp-test-" + UUID().uuidString
        home = ArchiveHome(root: root)
    }

    deinit { try? FileManager.default.removeItem(atPath: root) }

    func open() throws -> NodeArchive { try home.open(clock: clock) }

    /// Captures one simulated observation per entry of `days` (that many days
    /// each), in order, with the simulator's `seed` and `types` (all when nil).
    func simulate(seed: UInt64, days: [Int], types: [SimulatedType]? = nil) throws {
        var o = SimulatorCapture.Options()
        o.seed = seed
        if let types { o.types = types }
        for d in days {
            o.days = d
            _ = try SimulatorCapture.run(home: home, options: o)
        }
    }
}

/// Row counts of the evidence tables.
struct Counts: Equatable, CustomStringConvertible {
    var samples = 0, versions = 0, events = 0, ranges = 0, openRanges = 0
    var description: String { "samples \(samples) versions \(versions) events \(events) ranges \(ranges) open \(openRanges)" }

    static func of(_ node: NodeArchive) throws -> Counts {
        try node.archive.writer.read { db in
            Counts(samples: try Int.fetchOne(db, sql: "SELECT count(*) FROM samples")!,
                   versions: try Int.fetchOne(db, sql: "SELECT count(*) FROM sample_versions")!,
                   events: try Int.fetchOne(db, sql: "SELECT count(*) FROM sample_observation_events")!,
                   ranges: try Int.fetchOne(db, sql: "SELECT count(*) FROM sample_visibility_ranges")!,
                   openRanges: try Int.fetchOne(db, sql: "SELECT count(*) FROM sample_visibility_ranges WHERE last_observation_id IS NULL")!)
        }
    }
}

let heartRate = SampleTypeDescriptor("HKQuantityTypeIdentifierHeartRate", displayName: "Heart Rate", category: "quantity")
let steps = SampleTypeDescriptor("HKQuantityTypeIdentifierStepCount", displayName: "Steps", category: "quantity")

func hr(_ i: Int, value: Double = 60, uuid: Bool = true) -> CapturedSample {
    CapturedSample(uuid: uuid ? String(format: "00000000-0000-4000-8000-%012d", i) : nil,
                   startDate: 1_700_000_000 + Double(i) * 300, endDate: 1_700_000_000 + Double(i) * 300,
                   valueKind: .quantity, numericValue: value, unit: "count/min",
                   source: SourceDescriptor(name: "Test Watch", bundleIdentifier: "com.example.watch", productType: "Watch6,1", version: "10.1", operatingSystemVersion: "10.1"))
}

/// Captures one observation with a single type run.
@discardableResult
func capture(_ node: NodeArchive, _ type: SampleTypeDescriptor = heartRate, kind: TypeRunKind = .fullScan,
             samples: [CapturedSample], deleted: [String] = []) throws -> (obs: Int64, result: TypeRunResult) {
    let session = try CaptureSession.begin(node, context: ObservationContext(triggerReason: "test", selectedTypes: [type.identifier]))
    let run = try session.beginTypeRun(type, kind: kind)
    if !samples.isEmpty { try run.writePage(index: 0, samples: samples) }
    if !deleted.isEmpty { try run.recordDeletedObjects(index: 1, uuids: deleted) }
    let r = try run.complete()
    try session.finish()
    return (session.observationID, r)
}

func events(_ node: NodeArchive, observation: Int64) throws -> [String: Int] {
    try node.archive.writer.read { db in
        var out: [String: Int] = [:]
        for row in try Row.fetchAll(db, sql: "SELECT event_kind, count(*) AS n FROM sample_observation_events WHERE observation_id = ? GROUP BY event_kind", arguments: [observation]) {
            out[row["event_kind"]] = row["n"]
        }
        return out
    }
}

/// A plain GRDB queue on `path`, opened only after the process-wide SQLite
/// settings are applied (tests run in parallel; whichever opens first decides).
func rawQueue(_ path: String) throws -> DatabaseQueue {
    SQLiteSetup.ensure()
    return try DatabaseQueue(path: path)
}

/// A plain GRDB pool on `path`, opened after the process-wide SQLite settings.
func rawPool(_ path: String) throws -> DatabasePool {
    SQLiteSetup.ensure()
    return try DatabasePool(path: path)
}
