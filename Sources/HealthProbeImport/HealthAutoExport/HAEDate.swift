import HealthProbeCanonical

/// Health Auto Export dates, `yyyy-MM-dd HH:mm:ss Z` (`2024-02-06 14:30:00 -0800`),
/// parsed byte by byte: no DateFormatter, no locale, no calendar setting.
enum HAEDate {
    /// Unix seconds UTC, or nil when not of that form, the day is not in the
    /// month, or the offset is beyond ±14:00.
    static func parse(_ text: String) -> Double? {
        let b = Array(text.utf8)
        // yyyy-MM-dd HH:mm:ss ±hhmm (25 bytes) or ±hh:mm (26); the ISO `T`/`Z` forms are accepted too.
        guard b.count >= 20, b.count <= 29, let secs = CanonicalDate.parse(text) else { return nil }
        func num(_ from: Int, _ n: Int) -> Int { b[from..<(from + n)].reduce(0) { $0 * 10 + Int($1 - 0x30) } }
        let y = num(0, 4), mo = num(5, 2), d = num(8, 2)
        let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0
        let days = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][mo - 1]
        guard d <= days, num(17, 2) < 60 else { return nil }
        if let sign = b.lastIndex(where: { $0 == 0x2B || $0 == 0x2D }), sign > 10 {
            let hh = num(sign + 1, 2)
            guard hh <= 14 else { return nil }
        }
        return secs
    }

    /// The UTC offset (seconds) a date's text carries: `Z` is 0, `±hhmm` or `±hh:mm`;
    /// nil when it carries none (a text `parse` accepted).
    static func offsetSeconds(_ text: String) -> Int? {
        let b = Array(text.utf8)
        guard b.count >= 20 else { return nil }
        if b.last == UInt8(ascii: "Z") { return 0 }
        guard let sign = b.lastIndex(where: { $0 == 0x2B || $0 == 0x2D }), sign > 10 else { return nil }
        let d = b[(sign + 1)...].filter { $0 != UInt8(ascii: ":") }.map { Int($0) - 0x30 }
        guard d.count == 4, d.allSatisfy({ (0...9).contains($0) }) else { return nil }
        let hh = d[0] * 10 + d[1], mm = d[2] * 10 + d[3]
        guard hh <= 14, mm < 60 else { return nil }
        return (b[sign] == UInt8(ascii: "-") ? -1 : 1) * (hh * 3600 + mm * 60)
    }
}
