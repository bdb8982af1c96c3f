/// Canonical archive dates: Unix seconds UTC, normalized to whole milliseconds,
/// written as ISO 8601 UTC text with milliseconds (`2026-05-23T12:00:00.000Z`).
public enum CanonicalDate {
    /// Rounds Unix seconds to the nearest millisecond. Archive date columns hold
    /// only normalized values, so hashes of the text and stored values agree.
    @inline(__always)
    public static func normalize(_ seconds: Double) -> Double {
        Double(milliseconds(seconds)) / 1000
    }

    /// Whole milliseconds of `seconds`, never trapping: saturated at Int64's bounds, 0 for NaN.
    /// Callers check the range their dates must lie in (`BundleItemSchema.dates`, `SyncLimits.dates`).
    @inline(__always)
    public static func milliseconds(_ seconds: Double) -> Int64 {
        let x = (seconds * 1000).rounded(.toNearestOrEven)
        guard x >= -0x1p63 && x < 0x1p63 else { return x.isNaN ? 0 : (x < 0 ? .min : .max) }
        return Int64(x)
    }

    /// The instants the text holds (years 0000-9999), in milliseconds: `write` clamps to them.
    static let writable: ClosedRange<Int64> = -62_167_219_200_000 ... 253_402_300_799_999

    /// ISO 8601 UTC text with milliseconds. Years 0000-9999 only: an instant outside them
    /// is written as the nearest one inside (so it never reads back as itself).
    public static func string(_ seconds: Double) -> String {
        var out = [UInt8]()
        out.reserveCapacity(24)
        append(seconds, to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// Bytes of the canonical text: `YYYY-MM-DDTHH:MM:SS.sssZ`.
    public static let length = 24

    /// Appends the ISO 8601 text of `seconds` to `out`.
    public static func append(_ seconds: Double, to out: inout [UInt8]) {
        var scratch: (UInt64, UInt64, UInt64) = (0, 0, 0)  // 24 bytes
        withUnsafeMutableBytes(of: &scratch) { buf in
            write(seconds, to: buf.baseAddress!.assumingMemoryBound(to: UInt8.self))
            out.append(contentsOf: buf)
        }
    }

    /// Writes the ISO 8601 text of `seconds` (`length` bytes) at `out`.
    @inline(__always)
    public static func write(_ seconds: Double, to out: UnsafeMutablePointer<UInt8>) {
        let ms = min(max(milliseconds(seconds), writable.lowerBound), writable.upperBound)
        var days = ms >= 0 ? ms / 86_400_000 : (ms - 86_399_999) / 86_400_000
        let msOfDay = ms - days * 86_400_000
        // Civil-from-days (H. Hinnant), proleptic Gregorian.
        days += 719_468
        let era = (days >= 0 ? days : days - 146_096) / 146_097
        let doe = days - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365
        var year = yoe + era * 400
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let day = doy - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        if month <= 2 { year += 1 }
        @inline(__always) func d(_ v: Int64) -> UInt8 { 0x30 + UInt8(truncatingIfNeeded: v % 10) }
        let h = msOfDay / 3_600_000, mi = msOfDay / 60_000 % 60, s = msOfDay / 1000 % 60, f = msOfDay % 1000
        out[0] = d(year / 1000); out[1] = d(year / 100); out[2] = d(year / 10); out[3] = d(year); out[4] = 0x2D
        out[5] = d(month / 10); out[6] = d(month); out[7] = 0x2D; out[8] = d(day / 10); out[9] = d(day); out[10] = 0x54
        out[11] = d(h / 10); out[12] = d(h); out[13] = 0x3A; out[14] = d(mi / 10); out[15] = d(mi); out[16] = 0x3A
        out[17] = d(s / 10); out[18] = d(s); out[19] = 0x2E; out[20] = d(f / 100); out[21] = d(f / 10); out[22] = d(f); out[23] = 0x5A
    }

    /// Parses `YYYY-MM-DDTHH:MM:SS(.sss)?Z` or with a `±HH:MM`/`±HHMM` offset,
    /// returning Unix seconds UTC; `nil` when it is not of that form.
    public static func parse(_ text: String) -> Double? {
        var t = text
        return t.withUTF8 { parse(bytes: $0) }
    }

    /// `parse` over UTF-8 bytes (no copy).
    public static func parse(bytes b: UnsafeBufferPointer<UInt8>) -> Double? {
        @inline(__always) func num(_ from: Int, _ count: Int) -> Int64? {
            guard from + count <= b.count else { return nil }
            var v: Int64 = 0
            for i in from..<(from + count) {
                let c = b[i]
                guard c >= 0x30 && c <= 0x39 else { return nil }
                v = v * 10 + Int64(c - 0x30)
            }
            return v
        }
        guard b.count >= 20, let y = num(0, 4), b[4] == 0x2D, let mo = num(5, 2), b[7] == 0x2D,
              let d = num(8, 2), b[10] == 0x54 || b[10] == 0x20, let h = num(11, 2), b[13] == 0x3A,
              let mi = num(14, 2), b[16] == 0x3A, let s = num(17, 2) else { return nil }
        guard (1...12).contains(mo), (1...31).contains(d), h < 24, mi < 60, s < 61 else { return nil }
        var i = 19
        var fraction = 0.0
        if i < b.count && b[i] == 0x2E {
            i += 1
            var scale = 0.1
            let startFraction = i
            while i < b.count && b[i] >= 0x30 && b[i] <= 0x39 {
                fraction += Double(b[i] - 0x30) * scale
                scale /= 10
                i += 1
            }
            if i == startFraction { return nil }
        }
        var offset: Int64 = 0
        if i < b.count && b[i] == 0x20 { i += 1 }
        guard i < b.count else { return nil }
        if b[i] == 0x5A { i += 1 } else if b[i] == 0x2B || b[i] == 0x2D {
            let sign: Int64 = b[i] == 0x2D ? -1 : 1
            i += 1
            guard let oh = num(i, 2) else { return nil }
            i += 2
            if i < b.count && b[i] == 0x3A { i += 1 }
            guard let om = num(i, 2) else { return nil }
            i += 2
            offset = sign * (oh * 3600 + om * 60)
        } else { return nil }
        guard i == b.count else { return nil }
        let days = daysFromCivil(y, mo, d)
        let secs = days * 86400 + h * 3600 + mi * 60 + s - offset
        return Double(secs) + fraction
    }

    static func daysFromCivil(_ y0: Int64, _ m: Int64, _ d: Int64) -> Int64 {
        let y = m <= 2 ? y0 - 1 : y0
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }
}
