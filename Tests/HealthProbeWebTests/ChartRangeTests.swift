import Foundation
import Testing
import HealthProbeServer
import HealthProbeTestSupport
@testable import HealthProbeWeb

/// Time ranges on every chart and in the API: presets count back from today in each
/// device's own zone; a custom range names local dates; bad values are a 400 that says
/// what to send. Ticks carry units and dates people read.
@Suite("Chart ranges and ticks", .serialized)
struct ChartRangeTests {
    static func day(_ name: String, offset: Double, records: Int = 1) -> Dashboard.Day {
        Dashboard.Day(day: name, start: ChartRange.midnight(name)! - offset, records: records, valueSum: nil, valueMax: nil, sourceRevisions: 1)
    }

    static func series(_ days: [Dashboard.Day]) -> Dashboard.TypeSeries {
        Dashboard.TypeSeries(chain: String(repeating: "a", count: 64), chainShort: "aaaaaaaaaaaa", device: "phone", person: "ann",
                             typeIdentifier: "HKQuantityTypeIdentifierStepCount", observationID: 2, clockOffsetSeconds: nil, days: days)
    }

    @Test("parsing: presets, custom local dates, and 400s that name the parameter")
    func parsing() throws {
        #expect(try ChartRange.parse(range: nil, from: nil, to: nil) == .all)
        #expect(try ChartRange.parse(range: "30d", from: nil, to: nil).preset == .month)
        let custom = try ChartRange.parse(range: "7d", from: "2026-02-01", to: "2026-02-28")
        #expect(custom.preset == nil && custom.from == "2026-02-01" && custom.to == "2026-02-28")
        #expect(custom.query == "from=2026-02-01&to=2026-02-28")
        for (range, from, to, names) in [("8d", nil, nil, "range"), (nil, "2026-02-30", nil, "from"), (nil, nil, "2026-13-01", "to"),
                                         (nil, "26-01-01", nil, "from"), (nil, "2026-01-0x", nil, "from"),
                                         ("\n", nil, "2026-02-25", "range"), ("2w", "2026-02-01", "2026-02-28", "range")] as [(String?, String?, String?, String)] {
            #expect(throws: WebError.self, "\(range ?? "") \(from ?? "") \(to ?? "")") { try ChartRange.parse(range: range, from: from, to: to) }
            do { _ = try ChartRange.parse(range: range, from: from, to: to) } catch let e as WebError {
                #expect(e.message.contains(names), "\(e.message)")
            }
        }
        #expect(try ChartRange.date("2024-02-29", "from") == "2024-02-29")
        // The wrong way round: the same days.
        let swapped = try ChartRange.parse(range: nil, from: "2026-03-02", to: "2026-03-01")
        #expect(swapped.from == "2026-03-01" && swapped.to == "2026-03-02")
        #expect(throws: WebError.self) { try ChartRange.date("2023-02-29", "from") }
    }

    @Test("a preset counts back from today in the chain's zone: UTC-10, UTC, UTC+5:30")
    func presetsInZones() {
        // 2026-11-28T20:00Z: still the 28th at UTC-10 and in UTC, already the 29th at UTC+5:30.
        let now = ChartRange.midnight("2026-11-28")! + 20 * 3600
        for (offset, today) in [(-36_000.0, "2026-11-28"), (0, "2026-11-28"), (19_800, "2026-11-29")] {
            let names = (0..<10).map { ChartRange.dayName(ChartRange.midnight("2026-11-20")! + Double($0) * 86_400) }
            let s = Self.series(names.map { Self.day($0, offset: offset) })
            #expect(ChartRange.zoneOffset(s.days[0]) == offset)
            let week = ChartRange(preset: .week, from: nil, to: nil).apply(s, now: now)
            #expect(week.days.last?.day == today, "offset \(offset)")
            #expect(week.days.count == 7, "offset \(offset): \(week.days.map(\.day))")
            #expect(week.days.first?.day == ChartRange.dayName(ChartRange.midnight(today)! - 6 * 86_400), "offset \(offset)")
        }
        let s = Self.series(["2026-01-01", "2026-01-15", "2026-02-01"].map { Self.day($0, offset: 3600) })
        #expect(ChartRange(preset: nil, from: "2026-01-02", to: "2026-02-01").apply(s, now: 0).days.map(\.day) == ["2026-01-15", "2026-02-01"])
        #expect(ChartRange.all.apply(s, now: 0).days.count == 3)
    }

    @Test("day names and midnights agree across leap years and centuries")
    func dayNames() {
        for name in ["1970-01-01", "2000-02-29", "2024-12-31", "2100-03-01", "1969-12-31"] {
            #expect(ChartRange.dayName(ChartRange.midnight(name)!) == name)
            #expect(ChartRange.dayName(ChartRange.midnight(name)! + 86_399) == name)
        }
        #expect(ChartRange.midnight("2026-11-28") == 1_795_824_000)
    }

    @Test("ticks: round steps with the unit; a bar per calendar day, gaps kept; a title per bar with its unit")
    func ticks() {
        #expect(Chart.ticks(0) == [0, 1])
        #expect(Chart.ticks(9_500) == [0, 2_500, 5_000, 7_500, 10_000])
        #expect(Chart.ticks(73).last! >= 73 && Chart.ticks(73).count <= 6)
        // Values from a device at a double's edges: a handful of ticks, never a loop.
        for v in [Double.leastNonzeroMagnitude, 5e-324, 1e-310, .greatestFiniteMagnitude, 1e308] {
            let t = Chart.ticks(v)
            #expect(t.count <= 7 && t.first == 0, "\(v): \(t)")
        }
        let s = Self.series([Self.day("2026-03-01", offset: 0, records: 3), Self.day("2026-03-10", offset: 0, records: 5)])
        let svg = Chart.svg(s, metric: .records, span: ("2026-03-01", "2026-03-10"))
        #expect(svg.components(separatedBy: "<rect").count - 1 == 2)
        #expect(svg.contains("<title>1 Mar 2026: 3 records</title>") && svg.contains("<title>10 Mar 2026: 5 records</title>"), "\(svg)")
        #expect(svg.contains(">records</text>") && svg.contains(">1 Mar 2026</text>"))
        // The second bar sits in the tenth of ten slots, not the second of two.
        let width = (Chart.width - Chart.left - 8) / 10
        #expect(svg.contains("x=\"\(Chart.fmt(Chart.left + 9 * width + width * 0.1))\""), "\(svg)")
        let steps = Chart.svg(Self.series([Self.day("2026-03-01", offset: 0)]), metric: .sum)
        #expect(steps.contains(">steps</text>"))
    }

    @Test("the type pages and the API take range, from and to; a bad value is a 400 saying what to send")
    func pagesAndAPI() async throws {
        try await withHousehold { h in
            let ann = h.chains["ann-phone"]!
            let a = h.browser()
            try await a.signIn("ann", Household.password)
            let type = "HKQuantityTypeIdentifierStepCount"
            let api = try await a.request("GET", "/api/v1/chains/\(ann)/types/\(type)")
            #expect(api.status == 200)
            let all = try #require(try JSONSerialization.jsonObject(with: Data(api.body.utf8)) as? [String: Any])
            let days = try #require(all["days"] as? [[String: Any]]).compactMap { $0["day"] as? String }
            try #require(days.count >= 3, "\(days)")
            let (from, to) = (days[1], days[days.count - 2])
            let ranged = try await a.request("GET", "/api/v1/chains/\(ann)/types/\(type)?from=\(from)&to=\(to)")
            let got = try #require(try JSONSerialization.jsonObject(with: Data(ranged.body.utf8)) as? [String: Any])
            #expect(try #require(got["days"] as? [[String: Any]]).compactMap { $0["day"] as? String } == Array(days[1...(days.count - 2)]))
            let across = try await a.request("GET", "/api/v1/types/\(type)?from=\(from)&to=\(from)")
            let acrossJSON = try #require(try JSONSerialization.jsonObject(with: Data(across.body.utf8)) as? [String: Any])
            for s in try #require(acrossJSON["series"] as? [[String: Any]]) {
                #expect((s["days"] as? [[String: Any]] ?? []).allSatisfy { $0["day"] as? String == from })
            }
            // The API names only what it sends; a form's empty date means none.
            let empty = try await a.request("GET", "/api/v1/types/\(type)?to=")
            #expect(empty.status == 400 && empty.body.contains("to is empty"), "\(empty.body)")
            #expect(try await a.request("GET", "/types/\(type)?metric=sum&from=&to=").status == 200)
            let bad = try await a.request("GET", "/api/v1/chains/\(ann)/types/\(type)?from=2026-02-30")
            #expect(bad.status == 400 && bad.body.contains("YYYY-MM-DD"), "\(bad.body)")
            let badRange = try await a.request("GET", "/types/\(type)?range=2w")
            #expect(badRange.status == 400 && badRange.body.contains("7d, 30d, 90d, 1y, all"))
            #expect(badRange.body.contains("Sign out"), "an error page keeps the navigation")

            let page = try await a.request("GET", "/chains/\(ann)/types/\(type)?from=\(from)&to=\(to)").body
            #expect(page.contains("Showing \(from) to \(to)") && page.contains("value=\"\(from)\"") && page.contains("href=\"?range=30d&amp;at="), "\(page.prefix(3000))")
            #expect(page.contains("<title>\(Chart.shortDay(from, year: true)): "))
            let week = try await a.request("GET", "/types/\(type)?range=7d").body
            #expect(week.contains("Showing the last 7 days") && week.contains("<strong aria-current=\"page\">7 days</strong>"))
        }
    }
}
