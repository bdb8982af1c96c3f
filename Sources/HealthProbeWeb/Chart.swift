import Foundation
import HealthProbeArchive
import HealthProbeCanonical

/// Server-rendered SVG bar charts of a type's days: no script, scales to the page width.
enum Chart {
    /// What a bar shows: visible records, the day's value sum, or its highest value.
    enum Metric: String { case records, sum, max }

    /// The metrics that fit a type (`TypeCatalogue`), the default first: amounts are summed,
    /// measurements shown by their highest value (a day's heart rates are never added up).
    static func metrics(for type: String) -> [Metric] {
        switch TypeCatalogue.info(type).statistic {
        case .sum: return [.sum, .records]
        case .range, .latest: return [.max, .records]
        case .duration, .count: return [.records]
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
        }
    }

    static let width = 720.0, height = 220.0, left = 56.0, bottom = 28.0, top = 12.0

    /// One chain's days as bars. `metric` `.sum` uses value sums where the type has them.
    static func svg(_ series: Dashboard.TypeSeries, metric: Metric) -> String {
        let days = series.days
        let values = days.map { day -> Double in
            switch metric {
            case .records: return Double(day.records)
            case .sum: return day.valueSum ?? 0
            case .max: return day.valueMax ?? 0
            }
        }
        let maxValue = max(values.max() ?? 0, 1)
        let plotW = width - left - 8, plotH = height - top - bottom
        let slot = days.isEmpty ? plotW : plotW / Double(days.count)
        let label = Self.label(metric, type: series.typeIdentifier)
        let name = TypeCatalogue.name(series.typeIdentifier)
        var out = """
            <svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 \(Int(width)) \(Int(height))" role="img" class="chart" \
            aria-label="\(escape("\(name): \(label), chain \(series.chainShort)"))">
            <title>\(escape("\(name): \(label), chain \(series.chainShort) at observation \(series.observationID.map(String.init) ?? "none")"))</title>
            <line x1="\(left)" y1="\(top + plotH)" x2="\(width - 8)" y2="\(top + plotH)" class="axis"/>
            <line x1="\(left)" y1="\(top)" x2="\(left)" y2="\(top + plotH)" class="axis"/>
            <text x="\(left - 4)" y="\(top + 10)" text-anchor="end" class="tick">\(escape(number(maxValue)))</text>
            <text x="\(left - 4)" y="\(top + plotH)" text-anchor="end" class="tick">0</text>

            """
        for (i, day) in days.enumerated() {
            let h = values[i] / maxValue * plotH
            let x = left + Double(i) * slot
            let revisions = day.sourceRevisions > 1 ? ", sum of \(day.sourceRevisions) source revisions" : ""
            out += "<rect x=\"\(fmt(x + slot * 0.1))\" y=\"\(fmt(top + plotH - h))\" width=\"\(fmt(max(slot * 0.8, 0.5)))\" height=\"\(fmt(h))\" class=\"bar\">"
            out += "<title>\(escape("\(day.day): \(number(values[i]))\(revisions)"))</title></rect>\n"
        }
        if let first = days.first, let last = days.last {
            out += "<text x=\"\(left)\" y=\"\(height - 8)\" class=\"tick\">\(escape(first.day))</text>\n"
            out += "<text x=\"\(width - 8)\" y=\"\(height - 8)\" text-anchor=\"end\" class=\"tick\">\(escape(last.day))</text>\n"
        } else {
            out += "<text x=\"\(left + 8)\" y=\"\(top + plotH / 2)\" class=\"tick\">no visible records in this window</text>\n"
        }
        return out + "</svg>"
    }

    static func fmt(_ v: Double) -> String { String(format: "%.1f", v) }

    static func number(_ v: Double) -> String {
        if v == v.rounded(), abs(v) < 1e15 { return String(Int64(v)) }
        return String(format: "%.2f", v)
    }

    /// Escapes text for XML and HTML.
    static func escape(_ s: String) -> String {
        var out = ""
        out.reserveCapacity(s.utf8.count)
        for c in s {
            switch c {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&#39;"
            default: out.append(c)
            }
        }
        return out
    }
}
