import Foundation
import GRDB

/// Point-in-time reads, diffs and summaries for the CLIs.
extension Archive {
    /// `chain`'s latest observation id, `nil` when it has none.
    public func latestObservationID(chain: Int64) async throws -> Int64? {
        try await writer.read { db in try ObservationQueries.latestObservationID(db, chainID: chain) }
    }

    /// How many records were visible in `scope`.
    public func visibleCount(_ scope: SnapshotScope) async throws -> Int {
        try await writer.read { db in try PointInTime.count(db, scope) }
    }

    /// Every record visible in `scope`, in order, one at a time (memory: one row).
    public func streamVisible(_ scope: SnapshotScope, _ body: (VisibleSample) throws -> Void) throws {
        try writer.read { db in try PointInTime.stream(db, scope, body) }
    }

    /// A page of the records visible in `scope`, after `cursor`.
    public func visiblePage(_ scope: SnapshotScope, after cursor: PointInTime.Cursor?, limit: Int) async throws -> PointInTime.Page {
        try await writer.read { db in try PointInTime.page(db, scope, after: cursor, limit: limit) }
    }

    /// What differs from observation `a` to `b`: counts per type and, with `details`, a page of entries.
    public func diff(from a: Int64, to b: Int64, details: Bool, kind: DiffKind?, typeIdentifier: String?, afterSampleID: Int64,
                     limit: Int) async throws -> (counts: [DiffTypeCount], entries: [DiffEntry]) {
        try await writer.read { db in
            let diff = try ObservationDiff.prepare(db, from: a, to: b)
            let counts = try diff.counts(db)
            let entries = details ? try diff.page(db, kind: kind, typeIdentifier: typeIdentifier, afterSampleID: afterSampleID, limit: limit) : []
            return (counts, entries)
        }
    }

    /// Per-type summaries at observation `obs` (one type when given).
    public func summaries(at obs: Int64, typeIdentifier: String?) async throws -> [TypeSummary] {
        try await writer.read { db in try AggregateQueries.summaries(db, at: obs, typeIdentifier: typeIdentifier) }
    }

    /// A type's daily aggregates at observation `obs` for the `days` local days (of the
    /// observation's time zone) ending with the day of `latestEnd`.
    public func recentDays(at obs: Int64, typeIdentifier: String, latestEnd: Double?, days: Int) async throws -> [DailyAggregate] {
        try await writer.read { db in
            let lastDay = try LocalDays.of(db, observation: obs)
            let end = latestEnd.map { lastDay.dayStart($0) } ?? 0
            let from = end - Double(days - 1) * 86_400 - 7_200
            return try AggregateQueries.daily(db, at: obs, typeIdentifier: typeIdentifier, from: from)
        }
    }
}

/// A replica's latest state, for the household summary.
public struct LatestState: Sendable {
    public var lastObservationID: Int64?
    public var lastObservedAt: Double?
    /// When the last bundle was received.
    public var lastSyncAt: Double?
    public var summaries: [TypeSummary]
    public var daily: [DailyAggregate]
}

extension Archive {
    /// The latest observation with its summaries (one type when given) and, for a type,
    /// its daily aggregates within `[from, to)`; all in one read.
    public func latestState(typeIdentifier type: String?, from: Double?, to: Double?) throws -> LatestState {
        try writer.read { db in
            let last = try ObservationQueries.latest(db)
            var state = LatestState(lastObservationID: last?.id, lastObservedAt: last?.observedAt, lastSyncAt: try BundleLogRecord.lastReceivedAt(db),
                                    summaries: [], daily: [])
            if let id = last?.id {
                state.summaries = try AggregateQueries.summaries(db, at: id, typeIdentifier: type)
                if let type { state.daily = try AggregateQueries.daily(db, at: id, typeIdentifier: type, from: from, to: to) }
            }
            return state
        }
    }
}
