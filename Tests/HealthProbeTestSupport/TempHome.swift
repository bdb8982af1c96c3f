import Foundation
import GRDB
@testable import HealthProbeArchive
import HealthProbeSimulator

/// A throw-away home directory removed when the value is released.
public final class TempHome {
    public let root: String
    public let home: ArchiveHome
    public let clock = ManualClock(1_750_000_000)

    public init() {
        // Before any test opens SQLite directly (the settings apply only before the first connection).
        ProcessSettings.apply()
        root = NSTemporaryDirectory() + "hp-test-" + UUID().uuidString
        home = ArchiveHome(root: root)
    }

    deinit { try? FileManager.default.removeItem(atPath: root) }

    public func open() throws -> NodeArchive { try home.open(clock: clock) }

    /// A new home holding a copy of this one's files, for a test that damages or changes
    /// many copies of one history (no connection may be open on this home meanwhile).
    public func copy() throws -> TempHome {
        let copy = TempHome()
        try FileManager.default.copyItem(atPath: root, toPath: copy.root)
        return copy
    }

    /// Captures one simulated observation per entry of `days` (that many days
    /// each), in order, with the simulator's `seed` and `types` (all when nil).
    public func simulate(seed: UInt64, days: [Int], types: [SimulatedType]? = nil) throws {
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
public struct Counts: Equatable, CustomStringConvertible, Sendable {
    public var samples = 0, versions = 0, events = 0, ranges = 0, openRanges = 0
    public init(samples: Int = 0, versions: Int = 0, events: Int = 0, ranges: Int = 0, openRanges: Int = 0) {
        self.samples = samples
        self.versions = versions
        self.events = events
        self.ranges = ranges
        self.openRanges = openRanges
    }
    public var description: String { "samples \(samples) versions \(versions) events \(events) ranges \(ranges) open \(openRanges)" }

    public static func of(_ node: NodeArchive) throws -> Counts {
        try node.archive.writer.read { db in
            Counts(samples: try Int.fetchOne(db, sql: "SELECT count(*) FROM samples")!,
                   versions: try Int.fetchOne(db, sql: "SELECT count(*) FROM sample_versions")!,
                   events: try Int.fetchOne(db, sql: "SELECT count(*) FROM sample_observation_events")!,
                   ranges: try Int.fetchOne(db, sql: "SELECT count(*) FROM sample_visibility_ranges")!,
                   openRanges: try Int.fetchOne(db, sql: "SELECT count(*) FROM sample_visibility_ranges WHERE last_observation_id IS NULL")!)
        }
    }
}
