import Foundation
import GRDB

/// Time per state of a category type (sleep stages, stand hours) on each local day, as
/// visible at an observation: what a person reads for types whose statistic is a
/// duration. A record counts on the local day its end falls in, so a night belongs to
/// the morning it ends; days are the observation's zone's (`LocalDays`).
public enum CategoryDurations {
    /// One local day: seconds per category value, and how many records made them.
    public struct Day: Sendable, Equatable {
        /// The local date, `YYYY-MM-DD`.
        public var day: String
        /// The UTC start of that local day.
        public var start: Double
        /// Seconds per category value (records without a value count under -1).
        public var seconds: [Int64: Double]
        public var records: Int
    }

    /// The days of `typeIdentifier` visible at `observation` whose local day lies in
    /// `[from, to)` (UTC day starts; nil: unbounded), in day order. Streams the records;
    /// memory grows with the days, not the records. A type the archive never held has no days.
    public static func daily(_ db: Database, at observation: Int64, typeIdentifier: String, from: Double?, to: Double?) throws -> [Day] {
        guard try PointInTime.typeID(db, typeIdentifier) != nil else { return [] }
        let zone = try LocalDays.of(db, observation: observation)
        var cursor = LocalDays.Cursor(zone)
        var byStart: [Double: Day] = [:]
        // A record ending on a day in range started at most a day earlier than it (longer ones are rare and still found by their end).
        let scope = SnapshotScope(observationID: observation, typeIdentifier: typeIdentifier, from: from.map { $0 - 2 * 86_400 }, to: to)
        try PointInTime.stream(db, scope) { row in
            guard row.endDate.isFinite, row.startDate.isFinite else { return }
            // A record ending exactly at midnight belongs to the day before.
            let dayStart = cursor.dayStart(max(row.startDate, row.endDate - 0.001))
            if let from, dayStart < from { return }
            if let to, dayStart >= to { return }
            var day = byStart[dayStart] ?? Day(day: zone.date(dayStart), start: dayStart, seconds: [:], records: 0)
            day.seconds[row.categoryValue ?? -1, default: 0] += max(row.endDate - row.startDate, 0)
            day.records += 1
            byStart[dayStart] = day
        }
        return byStart.values.sorted { $0.start < $1.start }
    }
}
