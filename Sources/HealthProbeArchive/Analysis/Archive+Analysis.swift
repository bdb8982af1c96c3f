import Foundation
import GRDB

/// Analysis the CLIs ask of an archive: change reports, local days, aggregates.
extension Archive {
    /// Classifies each type's change from observation `from` to `to` (both nil: `chain`'s last two).
    public func changeReport(chain: Int64, from a: Int64?, to b: Int64?) async throws -> ChangeReport {
        try await writer.read { db in
            var from = a, to = b
            if from == nil || to == nil {
                let last = try Int64.fetchAll(db, sql: "SELECT id FROM observations WHERE device_chain_id = ? ORDER BY id DESC LIMIT 2", arguments: [chain])
                guard last.count == 2 else { throw ArchiveError(.notFound, "changes need two observations; the archive has \(last.count)") }
                from = last[1]; to = last[0]
            }
            return try ChangeClassifier.classify(db, diff: ObservationDiff.prepare(db, from: from!, to: to!))
        }
    }

    /// Recomputes every materialized aggregate.
    public func rebuildAggregates(now: Double) async throws {
        try await writer.write { db in try Aggregates.rebuildAll(db, now: now) }
    }
}

