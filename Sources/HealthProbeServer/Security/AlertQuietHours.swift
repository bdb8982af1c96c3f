import Foundation
import GRDB

/// Quiet hours per person (UTC minutes of the day): messages wait until they end;
/// evaluation never waits.
public struct QuietHours: Sendable, Codable, Equatable {
    /// Minutes after midnight UTC, 0 to 1439; a window may wrap midnight (22:00 to 07:00).
    public var start: Int
    public var end: Int

    public init?(start: Int, end: Int) {
        guard (0...1439).contains(start), (0...1439).contains(end), start != end else { return nil }
        self.start = start
        self.end = end
    }

    /// When the window around `now` ends, or nil if `now` is outside it.
    public func end(after now: Double) -> Double? {
        guard now.isFinite, abs(now) < 1e12 else { return nil }
        let day = (now / 86400).rounded(.down) * 86400
        let minute = Int(((now - day) / 60).rounded(.down))
        let inside = start < end ? (start..<end).contains(minute) : (minute >= start || minute < end)
        guard inside else { return nil }
        let endToday = day + Double(end) * 60
        return endToday > now ? endToday : endToday + 86400
    }
}

extension DeviceRegistry {
    /// Sets (or with nil clears) a person's quiet hours.
    public func setQuietHours(person: String, _ hours: QuietHours?) throws {
        try database.write { db in
            let id = try Self.personID(db, person)
            if let hours {
                try db.execute(sql: """
                    INSERT INTO alert_quiet_hours(person_id, start_minute, end_minute) VALUES (?, ?, ?)
                    ON CONFLICT(person_id) DO UPDATE SET start_minute = excluded.start_minute, end_minute = excluded.end_minute
                    """, arguments: [id, hours.start, hours.end])
            } else {
                try db.execute(sql: "DELETE FROM alert_quiet_hours WHERE person_id = ?", arguments: [id])
            }
        }
    }

    /// A person's quiet hours, if set.
    public func quietHours(person: String) throws -> QuietHours? {
        try database.read { db in
            try Row.fetchOne(db, sql: "SELECT q.* FROM alert_quiet_hours q JOIN people p ON p.id = q.person_id WHERE p.name = ?", arguments: [person])
                .flatMap { QuietHours(start: $0["start_minute"], end: $0["end_minute"]) }
        }
    }

    /// Holds an undelivered message until `until` without counting an attempt.
    public func postponeAlert(id: Int64, until: Double) throws {
        try database.write { db in
            try db.execute(sql: "UPDATE alert_outbox SET next_attempt_at = ? WHERE id = ? AND delivered_at IS NULL", arguments: [until, id])
        }
    }
}
