import Foundation

extension LocalDays {
    /// The local date and time (`YYYY-MM-DD HH:mm`) of `seconds` in this zone, as the
    /// device's owner saw it.
    public func time(_ seconds: Double) -> String {
        let c = Calendar.gregorian(in: timeZone).dateComponents([.year, .month, .day, .hour, .minute], from: Date(timeIntervalSince1970: seconds))
        return String(format: "%04d-%02d-%02d %02d:%02d", c.year ?? 0, c.month ?? 0, c.day ?? 0, c.hour ?? 0, c.minute ?? 0)
    }

    /// The zone as people read it: its identifier, or its offset from UTC.
    public var zoneName: String {
        if timeZone.identifier != "GMT", !timeZone.identifier.hasPrefix("GMT") { return timeZone.identifier }
        let s = timeZone.secondsFromGMT()
        return s == 0 ? "UTC" : String(format: "UTC%@%d:%02d", s < 0 ? "-" : "+", abs(s) / 3600, abs(s) % 3600 / 60)
    }
}

extension Calendar {
    static func gregorian(in zone: TimeZone) -> Calendar {
        var c = Calendar(identifier: .gregorian)
        c.timeZone = zone
        return c
    }
}
