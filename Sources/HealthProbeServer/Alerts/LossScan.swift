import Foundation
import GRDB
import HealthProbeArchive

/// Finds loss in a chain's newly applied observations: each is classified against the one
/// before it (`ChangeClassifier`, the verdicts the observation page shows), and a type
/// whose verdict is `loss` counts. Reads the replica on its own read-only connection.
public struct LossScan: Sendable {
    /// One observation with loss: its id and, per type, how many records were lost (never values).
    public struct Found: Sendable, Equatable {
        public var observation: Int64
        public var types: [(identifier: String, lost: Int)]

        public static func == (a: Found, b: Found) -> Bool {
            a.observation == b.observation && a.types.map(\.identifier) == b.types.map(\.identifier) && a.types.map(\.lost) == b.types.map(\.lost)
        }

        /// Type names and counts, for messages: "Step count: 12 records lost; Heart rate: 3 records lost".
        public var detail: String {
            let parts = types.prefix(5).map { "\(TypeCatalogue.name($0.identifier)): \($0.lost) record\($0.lost == 1 ? "" : "s") lost" }
            let more = types.count > 5 ? "; and \(types.count - 5) more type\(types.count - 5 == 1 ? "" : "s")" : ""
            return "loss in observation \(observation): " + parts.joined(separator: "; ") + more
        }

        /// The observation's evidence page, relative to the dashboard.
        public func page(chain: String) -> String { "/chains/\(chain)/observations/\(observation)" }
    }

    /// What one scan saw: the last observation examined, and the latest one with loss.
    public struct Result: Sendable, Equatable {
        public var through: Int64
        public var loss: Found?
    }

    public let store: ServerStore
    /// Observations classified per chain and round at most; the rest wait for the next round.
    public var limit: Int

    public init(store: ServerStore, limit: Int = 20) {
        self.store = store
        self.limit = limit
    }

    /// The limit for rounds `roundSeconds` apart (`alerts.evaluate_seconds`, 5 to 3600): 20 for
    /// each minute between them, so that a longer interval keeps up as the default does, from 20
    /// to 100 (a round classifies in one job on the thread pool the sync sessions share).
    public static func limit(roundSeconds: Double) -> Int {
        guard roundSeconds.isFinite, roundSeconds > 60 else { return 20 }
        return min(100, Int((min(roundSeconds, 86_400) / 3).rounded(.up)))
    }

    /// Classifies the observations after `after` (nil: a chain not seen before, of which only
    /// the latest observation is examined). Nil when the chain has no replica or nothing new.
    public func scan(chain: String, after: Int64?) throws -> Result? {
        guard FileManager.default.fileExists(atPath: store.replicaPath(chain)) else { return nil }
        return try store.readReplica(chain) { db -> Result? in
            let ids: [Int64]
            if let after {
                ids = try ObservationQueries.ids(db, after: after, limit: limit)
            } else {
                ids = try ObservationQueries.latestID(db).map { [$0] } ?? []
            }
            guard let through = ids.last else { return nil }
            var loss: Found?
            for id in ids {
                guard let previous = try ObservationQueries.previousID(db, before: id) else { continue }
                let report = try ChangeClassifier.classify(db, diff: ObservationDiff.prepare(db, from: previous, to: id))
                let lost = report.types.filter { $0.verdict == .loss }.map { (identifier: $0.typeIdentifier, lost: $0.lostRecords) }
                if !lost.isEmpty { loss = Found(observation: id, types: lost) }
            }
            return Result(through: through, loss: loss)
        }
    }
}
