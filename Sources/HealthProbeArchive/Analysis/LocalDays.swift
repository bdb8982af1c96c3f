import Foundation
import GRDB

/// Local-day buckets of an observation's timezone, as UTC bounds: midnight to
/// midnight, so a DST day has 23 or 25 hours (database-design.md 6.5).
public struct LocalDays: Sendable {
    public let timeZone: TimeZone
    private let calendar: Calendar

    /// The observation's timezone: its identifier when known, else its fixed
    /// offset, else UTC.
    public init(identifier: String?, secondsFromGMT: Int?) {
        let zone = identifier.flatMap(TimeZone.init(identifier:)) ?? secondsFromGMT.flatMap(TimeZone.init(secondsFromGMT:)) ?? TimeZone(identifier: "UTC")!
        timeZone = zone
        var c = Calendar(identifier: .gregorian)
        c.timeZone = zone
        calendar = c
    }

    /// Start (UTC seconds) of the local day holding `seconds`.
    public func dayStart(_ seconds: Double) -> Double {
        calendar.startOfDay(for: Date(timeIntervalSince1970: seconds)).timeIntervalSince1970
    }

    /// The local date (`YYYY-MM-DD`) of the day holding `seconds` in this zone.
    public func date(_ seconds: Double) -> String {
        let c = calendar.dateComponents([.year, .month, .day], from: Date(timeIntervalSince1970: seconds))
        return String(format: "%04d-%02d-%02d", c.year ?? 0, c.month ?? 0, c.day ?? 0)
    }

    /// The local days the daily aggregates of `observation` were bucketed in (that observation's zone).
    public static func of(_ db: Database, observation: Int64) throws -> LocalDays {
        let row = try Row.fetchOne(db, sql: "SELECT time_zone_identifier, time_zone_seconds_from_gmt FROM observations WHERE id = ?", arguments: [observation])
        return LocalDays(identifier: row?["time_zone_identifier"], secondsFromGMT: row?["time_zone_seconds_from_gmt"])
    }

    /// Start of the local day after the one starting at `start`.
    public func nextDayStart(_ start: Double) -> Double {
        let d = Date(timeIntervalSince1970: start)
        guard let next = calendar.date(byAdding: .day, value: 1, to: d) else { return start + 86_400 }
        return calendar.startOfDay(for: next).timeIntervalSince1970
    }

    /// The local days of one time after another, remembering the last day found:
    /// times read in order mostly share days, and finding one asks the calendar twice.
    struct Cursor {
        let days: LocalDays
        private var start = 0.0, next = 0.0

        init(_ days: LocalDays) { self.days = days }

        /// Start (UTC seconds) of the local day holding `seconds`.
        mutating func dayStart(_ seconds: Double) -> Double {
            if !(seconds >= start && seconds < next) {
                start = days.dayStart(seconds)
                next = days.nextDayStart(start)
            }
            return start
        }
    }

    /// Every local day from the one holding `from` to the one holding `to`, as
    /// `(start, end)` UTC bounds; `body` is called once per day.
    public func forEachDay(from: Double, to: Double, _ body: (Double, Double) throws -> Void) rethrows {
        var start = dayStart(from)
        while start <= to {
            let end = nextDayStart(start)
            try body(start, end)
            start = end
        }
    }
}
