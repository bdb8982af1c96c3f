import Foundation
import HealthProbeArchive
import HealthProbeCanonical

/// Server-rendered SVG bar charts of a type's days: no script, scales to the page width.
enum Chart {
    /// What a bar shows: visible records, the day's value sum, its highest value, or a
    /// category type's hours per state.
    enum Metric: String { case records, sum, max, hours }

    /// The metrics that fit a type (`TypeCatalogue`), the default first: amounts are summed,
    /// measurements shown by their highest value (a day's heart rates are never added up).
    static func metrics(for type: String) -> [Metric] {
        switch TypeCatalogue.info(type).statistic {
        case .sum: return [.sum, .records]
        case .range, .latest: return [.max, .records]
        case .duration: return [.hours, .records]
        case .count: return [.records]
        }
    }

    /// The metric asked for when it fits the type, else the type's default.
    static func metric(_ asked: String?, for type: String) -> Metric {
        let fitting = metrics(for: type)
        if let asked, let m = Metric(rawValue: asked), fitting.contains(m) { return m }
        return fitting[0]
    }

    /// The metric in words, with the type's unit where it has one.
    static func label(_ metric: Metric, type: String) -> String {
        let unit = TypeCatalogue.info(type).unit.map { " (\($0))" } ?? ""
        switch metric {
        case .records: return "visible records a day"
        case .sum: return "total a day" + unit
        case .max: return "highest a day" + unit
        case .hours: return TypeCatalogue.states(type).contains { $0.spansOthers }
            ? "hours a night by state (each night on the day it ends)" : "hours a day by state"
        }
    }

    static let width = 720.0, compactWidth = 380.0, height = 220.0, left = 56.0, bottom = 28.0, top = 12.0

    /// Tick values from 0 to at least `maxValue`: steps of 1, 2, 2.5 or 5 times a power of ten,
    /// at most five of them above zero.
    static func ticks(_ maxValue: Double) -> [Double] {
        guard maxValue > 0, maxValue.isFinite else { return [0, 1] }
        let raw = maxValue / 4
        let power = pow(10, (log10(raw)).rounded(.down))
        let step = [1.0, 2, 2.5, 5, 10].map { $0 * power }.first { $0 >= raw } ?? 10 * power
        // A maximum too small for a quarter of it to be a double (5e-324) has no power of ten:
        // one tick at it, rather than a step of 0 that never reaches it.
        guard step > 0, step.isFinite else { return [0, maxValue] }
        var out: [Double] = [0]
        while (out.last ?? 0) < maxValue && out.count <= 6 { out.append(Double(out.count) * step) }
        return out
    }

    static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    /// A local date `YYYY-MM-DD` as people read it: "28 Nov", with the year when asked.
    static func shortDay(_ day: String, year: Bool) -> String {
        let p = day.split(separator: "-")
        guard p.count == 3, let m = Int(p[1]), (1...12).contains(m), let d = Int(p[2]) else { return day }
        return "\(d) \(months[m - 1])" + (year ? " \(p[0])" : "")
    }

    /// One bar: its local day, the parts stacked from the bottom (value, CSS class), an
    /// optional outline behind them (a state spanning the others), and its title.
    struct Bar {
        var day: String
        var parts: [(value: Double, css: String)]
        var outline: Double?
        var title: String
        var top: Double { max(parts.reduce(0) { $0 + $1.value }, outline ?? 0) }
    }

    /// The bars of `series` for `metric`, and the unit of their values.
    static func bars(_ series: Dashboard.TypeSeries, metric: Metric) -> (bars: [Bar], unit: String) {
        let type = series.typeIdentifier
        if metric == .hours {
            let bars = (series.stateDays ?? []).map { d -> Bar in
                let stacked = d.states.filter { !$0.spansOthers }
                let parts = stacked.map { (value: $0.seconds / 3600, css: "bar state-\(stateSlot(type, $0.value))") }
                let outline = d.states.first { $0.spansOthers }.map { $0.seconds / 3600 }
                let words = d.states.map { "\($0.name) \(duration($0.seconds))" }.joined(separator: ", ")
                return Bar(day: d.day, parts: parts, outline: outline, title: "\(shortDay(d.day, year: true)): \(words)")
            }
            return (bars, "hours")
        }
        let unit = metric == .records ? "records" : (TypeCatalogue.info(type).unit ?? "")
        let bars = series.days.map { day -> Bar in
            let value: Double = switch metric {
            case .records, .hours: Double(day.records)
            case .sum: day.valueSum ?? 0
            case .max: day.valueMax ?? 0
            }
            let revisions = day.sourceRevisions > 1 ? ", sum of \(day.sourceRevisions) source revisions" : ""
            return Bar(day: day.day, parts: [(value, "bar")], outline: nil,
                       title: "\(shortDay(day.day, year: true)): \(number(value))\(unit.isEmpty ? "" : " " + unit)\(revisions)")
        }
        return (bars, unit)
    }

    /// The colour slot (0-5) of a state: its place in the catalogue's order, so a state keeps its colour.
    static func stateSlot(_ type: String, _ value: Int64) -> Int {
        let order = TypeCatalogue.states(type).filter { !$0.spansOthers }
        return order.firstIndex { $0.value == value }.map { $0 % 6 } ?? 5
    }

    /// A duration as people read it: "7 h 35 min", "40 min".
    static func duration(_ seconds: Double) -> String {
        guard seconds.isFinite, seconds >= 0 else { return "-" }
        let minutes = Int((seconds / 60).rounded())
        return minutes >= 60 ? "\(minutes / 60) h\(minutes % 60 == 0 ? "" : " \(minutes % 60) min")" : "\(minutes) min"
    }

    /// One chain's days as bars, each at its place in the calendar from `span`'s first day to
    /// its last (default: the series' own), so a day without records is a gap, not a missing slot.
    /// Y ticks carry the unit; date ticks name local days; each bar has a title. Category
    /// types' hours stack their states, with a legend.
    /// `compact` draws for a phone: a narrower drawing (so its text stays readable when it
    /// fills a small screen) with fewer date ticks; a page sends both and CSS shows one.
    static func svg(_ series: Dashboard.TypeSeries, metric: Metric, span: (String, String)? = nil, compact: Bool = false) -> String {
        let width = compact ? Self.compactWidth : Self.width
        let (bars, unit) = Self.bars(series, metric: metric)
        let yTicks = ticks(bars.map(\.top).max() ?? 0)
        let maxValue = max(yTicks.last ?? 1, 1)
        let plotW = width - left - 8, plotH = height - top - bottom
        let first = span?.0 ?? bars.first?.day, last = span?.1 ?? bars.last?.day
        let firstMidnight = first.flatMap(ChartRange.midnight), lastMidnight = last.flatMap(ChartRange.midnight)
        let count = (firstMidnight != nil && lastMidnight != nil) ? max(Int(((lastMidnight! - firstMidnight!) / 86_400).rounded()) + 1, 1) : max(bars.count, 1)
        let slot = plotW / Double(count)
        func position(_ i: Int, _ day: String) -> Int {
            guard let f = firstMidnight, let m = ChartRange.midnight(day) else { return i }
            return Int(((m - f) / 86_400).rounded())
        }
        let label = Self.label(metric, type: series.typeIdentifier)
        let name = TypeCatalogue.name(series.typeIdentifier)
        let who = [series.device, series.person].compactMap { $0 }.joined(separator: ", ")
        var out = """
            <svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 \(Int(width)) \(Int(height))" role="img" class="chart \(compact ? "compact" : "wide")" \
            aria-label="\(escape("\(name): \(label), \(who.isEmpty ? "chain " + series.chainShort : who)"))">
            <title>\(escape("\(name): \(label), \(who.isEmpty ? "chain " + series.chainShort : who) at observation \(series.observationID.map(String.init) ?? "none")"))</title>
            <line x1="\(left)" y1="\(top + plotH)" x2="\(width - 8)" y2="\(top + plotH)" class="axis"/>
            <line x1="\(left)" y1="\(top)" x2="\(left)" y2="\(top + plotH)" class="axis"/>

            """
        for t in yTicks {
            let y = top + plotH - t / maxValue * plotH
            if t > 0 { out += "<line x1=\"\(left)\" y1=\"\(fmt(y))\" x2=\"\(width - 8)\" y2=\"\(fmt(y))\" class=\"grid\"/>\n" }
            out += "<text x=\"\(left - 4)\" y=\"\(fmt(y + 4))\" text-anchor=\"end\" class=\"tick\">\(escape(number(t)))</text>\n"
        }
        if !unit.isEmpty { out += "<text x=\"\(left + 4)\" y=\"\(top + 10)\" class=\"tick unit\">\(escape(unit))</text>\n" }
        for (i, bar) in bars.enumerated() {
            let x = left + Double(position(i, bar.day)) * slot
            let w = fmt(max(slot * 0.8, 0.5)), bx = fmt(x + slot * 0.1)
            out += "<g><title>\(escape(bar.title))</title>"
            if let outline = bar.outline {
                let h = outline / maxValue * plotH
                out += "<rect x=\"\(bx)\" y=\"\(fmt(top + plotH - h))\" width=\"\(w)\" height=\"\(fmt(h))\" class=\"span\"/>"
            }
            var base = 0.0
            for part in bar.parts {
                let h = part.value / maxValue * plotH
                out += "<rect x=\"\(bx)\" y=\"\(fmt(top + plotH - base - h))\" width=\"\(w)\" height=\"\(fmt(h))\" class=\"\(part.css)\"/>"
                base += h
            }
            out += "</g>\n"
        }
        if let f = firstMidnight, lastMidnight != nil {
            // Up to six date ticks, evenly spaced in days; the year on the first and when it changes.
            let every = max(Int((Double(count) / (compact ? 3 : 6)).rounded(.up)), 1)
            var previousYear = ""
            for k in stride(from: 0, to: count, by: every) {
                let name = ChartRange.dayName(f + Double(k) * 86_400)
                let year = String(name.prefix(4))
                let x = left + (Double(k) + 0.5) * slot
                out += "<text x=\"\(fmt(x))\" y=\"\(height - 8)\" text-anchor=\"\(k == 0 ? "start" : "middle")\" class=\"tick\">\(escape(shortDay(name, year: year != previousYear)))</text>\n"
                previousYear = year
            }
        }
        if bars.isEmpty {
            out += "<text x=\"\(left + 8)\" y=\"\(top + plotH / 2)\" class=\"tick\">no visible records in this window</text>\n"
        }
        return out + "</svg>"
    }

    /// The states a chart of `series` shows, with their colour slots, for its legend.
    static func legend(_ series: [Dashboard.TypeSeries], metric: Metric) -> [(name: String, css: String)] {
        guard metric == .hours, let type = series.first?.typeIdentifier else { return [] }
        var seen: [Int64: (name: String, css: String)] = [:]
        var order: [Int64] = []
        for s in series { for d in s.stateDays ?? [] { for st in d.states where seen[st.value] == nil {
            seen[st.value] = (st.name, st.spansOthers ? "span" : "state-\(stateSlot(type, st.value))")
            order.append(st.value)
        } } }
        let known = TypeCatalogue.states(type).map(\.value)
        return order.sorted { (known.firstIndex(of: $0) ?? Int.max, $0) < (known.firstIndex(of: $1) ?? Int.max, $1) }.compactMap { seen[$0] }
    }

    /// A coordinate with one decimal ("12.5", "-3.0"), written without `String(format:)`:
    /// formatting was a quarter of the dashboard's time under load (`hp-bench web`, 12 chains).
    static func fmt(_ v: Double) -> String {
        guard v.isFinite, abs(v) < 1e15 else { return v.isNaN ? "nan" : (v < 0 ? "-inf" : "inf") }
        let tenths = Int64((abs(v) * 10).rounded())
        return (v < 0 && tenths != 0 ? "-" : "") + String(tenths / 10) + "." + String(tenths % 10)
    }

    /// A value as people read it: thousands separated, at most two decimals.
    static func number(_ v: Double) -> String {
        guard v.isFinite else { return "-" }
        if v == v.rounded(), abs(v) < 1e15 {
            let digits = String(Int64(abs(v)))
            var out = ""
            for (i, c) in digits.enumerated() {
                if i > 0, (digits.count - i) % 3 == 0 { out.append(",") }
                out.append(c)
            }
            return (v < 0 ? "-" : "") + out
        }
        return String(format: "%.2f", v)
    }

    /// Escapes text for XML and HTML, scalar by scalar (a quote followed by a combining mark
    /// is one `Character` but still a quote to a parser).
    static func escape(_ s: String) -> String {
        // Most text has nothing to escape: it is returned as it is, without a copy.
        guard s.utf8.contains(where: { $0 == UInt8(ascii: "&") || $0 == UInt8(ascii: "<") || $0 == UInt8(ascii: ">") || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "'") }) else { return s }
        var out = String.UnicodeScalarView()
        for c in s.unicodeScalars {
            switch c {
            case "&": out.append(contentsOf: "&amp;".unicodeScalars)
            case "<": out.append(contentsOf: "&lt;".unicodeScalars)
            case ">": out.append(contentsOf: "&gt;".unicodeScalars)
            case "\"": out.append(contentsOf: "&quot;".unicodeScalars)
            case "'": out.append(contentsOf: "&#39;".unicodeScalars)
            default: out.append(c)
            }
        }
        return String(out)
    }
}
