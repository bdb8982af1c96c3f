import Foundation
import Testing
import HealthProbeArchive
import HealthProbeServer
import HealthProbeTestSupport
@testable import HealthProbeWeb

/// Sleep is shown as time per state on the morning each night ends, in the device's own
/// days: stages stacked, "in bed" drawn around them, states named, never "category 3".
@Suite("Sleep as hours per state", .serialized)
struct SleepChartTests {
    static let sleep = SampleTypeDescriptor("HKCategoryTypeIdentifierSleepAnalysis", displayName: "Sleep", category: .category)

    /// A Berlin night from 23:00 on `date` to 07:00 the next day: in bed all night, then
    /// 2 h core, 1 h deep, 1 h 30 min REM, 30 min awake, 2 h core, and a 20-minute nap at 14:00 on the next day.
    static func night(_ date: String) -> [CapturedSample] {
        var c = Calendar(identifier: .gregorian)
        c.timeZone = TimeZone(identifier: "Europe/Berlin")!
        let p = date.split(separator: "-").map { Int($0)! }
        let bed = c.date(from: DateComponents(year: p[0], month: p[1], day: p[2], hour: 23))!.timeIntervalSince1970
        var out: [CapturedSample] = []
        func add(_ value: Int64, _ start: Double, _ minutes: Double) {
            out.append(CapturedSample(uuid: String(format: "00000000-0000-4000-e000-%012d", Int(start) % 1_000_000_000_000 + out.count),
                                      startDate: start, endDate: start + minutes * 60, valueKind: .category, categoryValue: Int(value),
                                      source: SourceDescriptor(name: "Test Watch", bundleIdentifier: "com.apple.health", productType: "Watch6,1", version: "10.1", operatingSystemVersion: "10.1")))
        }
        add(0, bed, 480)
        var t = bed
        for (v, m) in [(Int64(3), 120.0), (4, 60), (5, 90), (2, 30), (3, 120)] { add(v, t, m); t += m * 60 }
        add(1, bed + 15 * 3600, 20)
        return out
    }

    @Test("a Berlin night counts on its morning: hours per stage in the archive, the API and the page, with a legend and titles in words")
    func night() async throws {
        // The archive alone: the night ends on the 31st (across the DST change of the 30th).
        let home = TempHome()
        let node = try home.open()
        let obs = try captureIn(node, Self.sleep, zone: "Europe/Berlin", samples: Self.night("2025-03-30"))
        let days = try await node.archive.readSnapshot { db in
            try CategoryDurations.daily(db, at: obs, typeIdentifier: Self.sleep.identifier, from: nil, to: nil)
        }
        #expect(days.map(\.day) == ["2025-03-31"])
        #expect(days.first?.seconds == [0: 480 * 60, 3: 240 * 60, 4: 3600, 5: 5400, 2: 1800, 1: 1200])
        #expect(days.first?.records == 7)

        try await withHousehold { h in
            let chain = try await h.sync(device: "cat-watch", person: "cat") { home in
                _ = try captureIn(try home.open(), Self.sleep, zone: "Europe/Berlin", samples: Self.night("2025-03-30"))
            }
            let c = h.browser()
            try await c.signIn("cat", Household.password)
            let reply = try await c.request("GET", "/api/v1/chains/\(chain)/types/HKCategoryTypeIdentifierSleepAnalysis?range=all")
            #expect(reply.status == 200)
            let json = try #require(try JSONSerialization.jsonObject(with: Data(reply.body.utf8)) as? [String: Any])
            let states = try #require((json["state_days"] as? [[String: Any]])?.first)
            #expect(states["day"] as? String == "2025-03-31")
            let names = (states["states"] as? [[String: Any]] ?? []).map { "\($0["name"] ?? ""):\($0["seconds"] ?? "")" }
            #expect(names == ["Deep sleep:3600", "Core sleep:14400", "REM sleep:5400", "Asleep (no stage):1200", "Awake:1800", "In bed:28800"])

            // A window is a window for states too: the night before it is not shown, the one inside is.
            for (query, shown) in [("from=2025-04-01&to=2025-04-30", 0), ("from=2025-03-31&to=2025-03-31", 1)] {
                let r = try await c.request("GET", "/api/v1/chains/\(chain)/types/HKCategoryTypeIdentifierSleepAnalysis?\(query)")
                let j = try #require(try JSONSerialization.jsonObject(with: Data(r.body.utf8)) as? [String: Any])
                #expect((j["state_days"] as? [Any])?.count == shown, "\(query)")
                let p = try await c.request("GET", "/chains/\(chain)/types/HKCategoryTypeIdentifierSleepAnalysis?\(query)").body
                #expect(p.contains("class=\"span\"") == (shown == 1), "\(query)")
            }
            let page = try await c.request("GET", "/chains/\(chain)/types/HKCategoryTypeIdentifierSleepAnalysis?range=all").body
            #expect(page.contains("Each bar: hours a night by state (each night on the day it ends)"))
            #expect(page.contains("<li><span class=\"swatch state-0\"></span>Deep sleep</li>") && page.contains("<li><span class=\"swatch span\"></span>In bed</li>"))
            #expect(page.contains("31 Mar 2025: Deep sleep 1 h, Core sleep 4 h, REM sleep 1 h 30 min, Asleep (no stage) 20 min, Awake 30 min, In bed 8 h"))
            #expect(page.contains("class=\"span\"") && page.contains("class=\"bar state-1\""))
            #expect(!page.contains("category 3"))
            // Records as the other view: the visible list names the states.
            let visible = try await c.request("GET", "/chains/\(chain)/observations/1/visible?type=HKCategoryTypeIdentifierSleepAnalysis").body
            #expect(visible.contains("Deep sleep") && visible.contains("In bed") && !visible.contains("category "))
        }
    }
}
