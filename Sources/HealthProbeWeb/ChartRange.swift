import Foundation
import HealthProbeCanonical
import Hummingbird

/// The days a chart shows: a preset (the last 7, 30 or 90 days, a year, all) or a custom
/// `from`/`to` pair of local dates (`YYYY-MM-DD`, both inclusive). Days are each chain's
/// own local days, so a range is applied to the day names the chain's aggregates carry.
struct ChartRange: Equatable, Sendable {
    enum Preset: String, CaseIterable, Sendable {
        case week = "7d", month = "30d", quarter = "90d", year = "1y", all

        var days: Int? {
            switch self {
            case .week: 7
            case .month: 30
            case .quarter: 90
            case .year: 365
            case .all: nil
            }
        }

        var label: String {
            switch self {
            case .week: "7 days"
            case .month: "30 days"
            case .quarter: "90 days"
            case .year: "a year"
            case .all: "all"
            }
        }
    }

    /// A preset, or nil for a custom range.
    var preset: Preset?
    /// Inclusive local dates; nil is open.
    var from: String?
    var to: String?

    static let all = ChartRange(preset: .all, from: nil, to: nil)

    /// Reads `range=`, `from=` and `to=`. A custom range wins over a preset; neither is `all`.
    /// Bad values are a 400 naming the parameter and what it takes.
    static func parse(range: String?, from: String?, to: String?) throws -> ChartRange {
        let f = try from.flatMap { $0.isEmpty ? nil : try date($0, "from") }
        let t = try to.flatMap { $0.isEmpty ? nil : try date($0, "to") }
        // A range is checked even where dates win over it: a bad value is never silently ignored.
        var preset: Preset?
        if let range, !range.isEmpty {
            guard let p = Preset(rawValue: range) else {
                throw WebError(.badRequest, "range must be one of \(Preset.allCases.map(\.rawValue).joined(separator: ", ")), or give from and to as YYYY-MM-DD")
            }
            preset = p
        }
        // Dates given the wrong way round mean the same days.
        if let f, let t, f > t { return ChartRange(preset: nil, from: t, to: f) }
        if f != nil || t != nil { return ChartRange(preset: nil, from: f, to: t) }
        guard let preset else { return .all }
        return ChartRange(preset: preset, from: nil, to: nil)
    }

    /// A local date `YYYY-MM-DD` that exists in the calendar.
    static func date(_ text: String, _ name: String) throws -> String {
        let bytes = Array(text.utf8)
        func digits(_ r: Range<Int>) -> Int? {
            var n = 0
            for i in r { guard bytes[i] >= 48, bytes[i] <= 57 else { return nil }; n = n * 10 + Int(bytes[i] - 48) }
            return n
        }
        guard bytes.count == 10, bytes[4] == 45, bytes[7] == 45,
              let y = digits(0..<4), let m = digits(5..<7), let d = digits(8..<10),
              (1...12).contains(m), d >= 1, d <= daysIn(month: m, year: y) else {
            throw WebError(.badRequest, "\(name) must be a date as YYYY-MM-DD, e.g. 2026-11-28")
        }
        return text
    }

    static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: return (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    /// The first and last local day this range names for `series`, either open. A preset
    /// counts back from today in the chain's own zone (read off its day names and bucket
    /// starts), today included.
    func bounds(_ series: Dashboard.TypeSeries, now: Double) -> (from: String?, to: String?) {
        guard let n = preset?.days else { return (from, to) }
        let offset = series.days.last.flatMap { Self.zoneOffset($0) } ?? 0
        return (Self.dayName(now + offset - Double(n - 1) * 86_400), Self.dayName(now + offset))
    }

    /// The days of `series` in this range (its state days too).
    func apply(_ series: Dashboard.TypeSeries, now: Double) -> Dashboard.TypeSeries {
        var out = series
        let (lo, hi) = bounds(series, now: now)
        func inside(_ day: String) -> Bool { (lo.map { day >= $0 } ?? true) && (hi.map { day <= $0 } ?? true) }
        out.days = series.days.filter { inside($0.day) }
        out.stateDays = series.stateDays?.filter { inside($0.day) }
        return out
    }

    /// The zone offset a day was bucketed with: its name's UTC midnight minus its start.
    static func zoneOffset(_ day: Dashboard.Day) -> Double? {
        guard let midnight = midnight(day.day) else { return nil }
        return midnight - day.start
    }

    /// Unix seconds of a `YYYY-MM-DD` name's midnight in UTC.
    static func midnight(_ day: String) -> Double? {
        CanonicalDate.parse(day + "T00:00:00.000Z")
    }

    /// The UTC date name of `seconds`.
    static func dayName(_ seconds: Double) -> String {
        String(CanonicalDate.string(seconds).prefix(10))
    }

    /// The query that selects this range, for links (`range=30d` or `from=...&to=...`).
    var query: String {
        if let preset { return "range=\(preset.rawValue)" }
        return [from.map { "from=\($0)" }, to.map { "to=\($0)" }].compactMap { $0 }.joined(separator: "&")
    }

    /// In words, for the page.
    var words: String {
        if let preset { return preset == .all ? "the whole history" : "the last \(preset.label)" }
        switch (from, to) {
        case let (f?, t?): return "\(f) to \(t)"
        case let (f?, nil): return "from \(f)"
        case let (nil, t?): return "up to \(t)"
        default: return "the whole history"
        }
    }
}

extension Params {
    /// The chart's days from `range=`, `from=` and `to=` (pages and API alike).
    static func chartRange(_ request: Request) throws -> ChartRange {
        // A form leaves an unset date empty; the API names only what it sends.
        if request.uri.path.hasPrefix("/api/") {
            for name in ["range", "from", "to"] where request.uri.queryParameters[Substring(name)].map({ $0.isEmpty }) == true {
                throw WebError(.badRequest, "\(name) is empty: leave it out, or give \(name == "range" ? "7d, 30d, 90d, 1y or all" : "a date as YYYY-MM-DD")")
            }
        }
        return try ChartRange.parse(range: try query(request, "range", max: 8), from: try query(request, "from", max: 10), to: try query(request, "to", max: 10))
    }
}
