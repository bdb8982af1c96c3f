import Foundation
import GRDB

/// Quiet hours per person (minutes of the day on the clock of their time zone): messages
/// wait until they end; evaluation never waits.
public struct QuietHours: Sendable, Codable, Equatable {
    /// Minutes after local midnight, 0 to 1439; a window may wrap midnight (22:00 to 07:00).
    public var start: Int
    public var end: Int
    /// The IANA time zone the times are in (`Europe/Berlin`); `UTC` by default.
    public var zone: String

    public init?(start: Int, end: Int, zone: String = "UTC") {
        guard (0...1439).contains(start), (0...1439).contains(end), start != end, Self.timeZone(zone) != nil else { return nil }
        self.start = start
        self.end = end
        // As given: Foundation names UTC "GMT".
        self.zone = zone
    }

    /// An IANA time zone by its identifier (`Europe/Berlin`, `UTC`), nil unless Foundation knows it.
    public static func timeZone(_ identifier: String) -> TimeZone? {
        guard (1...64).contains(identifier.utf8.count),
              identifier.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "/_-+".contains($0)) }) else { return nil }
        return TimeZone(identifier: identifier)
    }

    /// When the window around `now` ends (the next time the zone's clock shows `end`, daylight
    /// saving time included), or nil if `now` is outside it.
    public func end(after now: Double) -> Double? {
        guard now.isFinite, abs(now) < 1e11, let tz = Self.timeZone(zone) else { return nil }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = tz
        let date = Date(timeIntervalSince1970: now)
        let local = calendar.dateComponents([.hour, .minute], from: date)
        guard let h = local.hour, let m = local.minute else { return nil }
        let minute = h * 60 + m
        let inside = start < end ? (start..<end).contains(minute) : (minute >= start || minute < end)
        guard inside else { return nil }
        // A time skipped by a DST change (02:30 on the spring-forward night) ends at the first time after it.
        return calendar.nextDate(after: date, matching: DateComponents(hour: end / 60, minute: end % 60, second: 0),
                                 matchingPolicy: .nextTime)?.timeIntervalSince1970
    }

    /// Registry migration "v11 quiet hours zone": the zone of each person's quiet hours (UTC until set).
    static func migrate(_ db: Database) throws {
        try db.execute(sql: "ALTER TABLE alert_quiet_hours ADD COLUMN time_zone TEXT NOT NULL DEFAULT 'UTC'")
    }
}

extension DeviceRegistry {
    /// Sets (or with nil clears) a person's quiet hours.
    public func setQuietHours(person: String, _ hours: QuietHours?) throws {
        try database.write { db in
            let id = try Self.personID(db, person)
            if let hours {
                try db.execute(sql: """
                    INSERT INTO alert_quiet_hours(person_id, start_minute, end_minute, time_zone) VALUES (?, ?, ?, ?)
                    ON CONFLICT(person_id) DO UPDATE SET start_minute = excluded.start_minute, end_minute = excluded.end_minute,
                        time_zone = excluded.time_zone
                    """, arguments: [id, hours.start, hours.end, hours.zone])
            } else {
                try db.execute(sql: "DELETE FROM alert_quiet_hours WHERE person_id = ?", arguments: [id])
            }
        }
    }

    /// A person's quiet hours, if set. A zone this system no longer knows reads as UTC.
    public func quietHours(person: String) throws -> QuietHours? {
        try database.read { db in
            try Row.fetchOne(db, sql: "SELECT q.* FROM alert_quiet_hours q JOIN people p ON p.id = q.person_id WHERE p.name = ?", arguments: [person])
                .flatMap { QuietHours(start: $0["start_minute"], end: $0["end_minute"], zone: $0["time_zone"]) ?? QuietHours(start: $0["start_minute"], end: $0["end_minute"]) }
        }
    }

    /// Holds an undelivered message until `until` without counting an attempt.
    public func postponeAlert(id: Int64, until: Double) throws {
        try database.write { db in
            try db.execute(sql: "UPDATE alert_outbox SET next_attempt_at = ? WHERE id = ? AND delivered_at IS NULL", arguments: [until, id])
        }
    }
}
