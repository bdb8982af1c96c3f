import Foundation
import GRDB

extension Aggregates {
    /// A type's summary and daily groups summed in one pass over its visible samples
    /// (any order): what the full SQL computation gives when every sample has a value,
    /// all in one unit. Fed from SQL rows (`updateBySweep`) or, for a capture's first
    /// run of a type, sample by sample as they appear (`update(visible:)`); `usable`
    /// turns false, for good, on a sample without a value, a second unit or too many
    /// daily groups, and the caller then computes the aggregates from the archive.
    struct Sweep {
        /// The observation time zone the days were computed in.
        let zoneID: String?
        let zoneOffset: Int?
        private(set) var usable = true
        private(set) var count = 0
        private var micro = ExactMicroSum()
        private var top = -Double.infinity
        private var first = Double.infinity, last = -Double.infinity
        /// The first sample's unit; every other must have the same.
        private var unit: String?? = .none
        private var groups = DailyDelta()
        private var cursor: LocalDays.Cursor
        /// Samples of one day and revision come in runs: summed here until either changes.
        private var runDay = 0.0, runRevision: Int64?, run = DailyDelta.Group()

        init(zoneID: String?, zoneOffset: Int?) {
            self.zoneID = zoneID
            self.zoneOffset = zoneOffset
            cursor = LocalDays.Cursor(LocalDays(identifier: zoneID, secondsFromGMT: zoneOffset))
        }

        /// Whether the days were computed in this observation time zone.
        func isIn(zoneID: String?, zoneOffset: Int?) -> Bool { self.zoneID == zoneID && self.zoneOffset == zoneOffset }

        mutating func add(start: Double, end: Double, value: Double?, unit u: String?, revision: Int64?) {
            guard usable else { return }
            guard let value else { usable = false; return }
            if let expected = unit { guard u == expected else { usable = false; return } } else { unit = .some(u) }
            let valueMicro = Aggregates.micro(value)
            count += 1
            micro.add(valueMicro)
            top = max(top, value)
            first = min(first, start); last = max(last, end)
            let day = cursor.dayStart(start)
            if run.count > 0 && (day != runDay || revision != runRevision) { flushRun() }
            runDay = day
            runRevision = revision
            run.add(micro: valueMicro, value: value)
        }

        private mutating func flushRun() {
            guard run.count > 0 else { return }
            if !groups.add(day: runDay, revision: runRevision, group: run) { usable = false }
            run = DailyDelta.Group()
        }

        /// Writes the summary (with `changes`) and the daily rows of `typeID` at `obs`;
        /// false, with nothing written, when not usable or empty.
        mutating func write(_ db: Database, obs: Int64, typeID: Int64, typeIdentifier: String, changes: () throws -> ChangeCounts,
                            now: Double) throws -> Bool {
            flushRun()
            // A sum beyond 64-bit micro-units (the type's or a day's) is left to the full pass.
            guard usable, count > 0, let total = micro.total,
                  !groups.days.values.contains(where: { $0.values.contains { $0.micro.total == nil } }) else { return false }
            let insert = try insertDailyStatement(db)
            for d in groups.days.keys.sorted() {
                try insertNewGroups(insert, obs: obs, typeID: typeID, day: d, end: cursor.days.nextDayStart(d), groups: groups.days[d]!)
            }
            try hashDaily(db, obs: obs, typeID: typeID, typeIdentifier: typeIdentifier)
            try insertSummary(db, obs: obs, typeID: typeID, count: count, changes: try changes(), first: first, last: last, total: total, top: top,
                              hash: try summaryHash(typeIdentifier: typeIdentifier, count: count, first: first, last: last, total: total, top: top),
                              dailyBase: obs, now: now)
            return true
        }
    }
}
