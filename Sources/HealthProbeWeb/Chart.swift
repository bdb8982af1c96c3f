import Foundation
import HealthProbeCanonical

/// Server-rendered SVG bar charts of a type's days: no script, scales to the page width.
enum Chart {
    enum Metric: String { case records, sum }

    static let width = 720.0, height = 220.0, left = 56.0, bottom = 28.0, top = 12.0

    /// One chain's days as bars. `metric` `.sum` uses value sums where the type has them.
    static func svg(_ series: Dashboard.TypeSeries, metric: Metric) -> String {
        let days = series.days
        let values = days.map { metric == .sum ? ($0.valueSum ?? 0) : Double($0.records) }
        let maxValue = max(values.max() ?? 0, 1)
        let plotW = width - left - 8, plotH = height - top - bottom
        let slot = days.isEmpty ? plotW : plotW / Double(days.count)
        let label = metric == .sum ? "daily value sum" : "daily visible records"
        var out = """
            <svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 \(Int(width)) \(Int(height))" role="img" class="chart" \
            aria-label="\(escape("\(label) of \(series.typeIdentifier), chain \(series.chainShort)"))">
            <title>\(escape("\(label), \(series.typeIdentifier), chain \(series.chainShort) at observation \(series.observationID.map(String.init) ?? "none")"))</title>
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
