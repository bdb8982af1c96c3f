import Foundation
import Testing
import HealthProbeArchive
import HealthProbeServer
import HealthProbeTestSupport
@testable import HealthProbeWeb

/// A chart's days are the device's local days, named as the device names them.
@Suite("Local days on the page", .serialized)
struct LocalDayTests {
    /// Two heart-rate samples at 00:30 and 23:30 local time of `date` in `zone`.
    static func edges(of date: String, in zone: String) -> [CapturedSample] {
        var c = Calendar(identifier: .gregorian)
        c.timeZone = TimeZone(identifier: zone)!
        let parts = date.split(separator: "-").map { Int($0)! }
        let midnight = c.date(from: DateComponents(year: parts[0], month: parts[1], day: parts[2]))!.timeIntervalSince1970
        let next = c.date(byAdding: .day, value: 1, to: Date(timeIntervalSince1970: midnight))!.timeIntervalSince1970
        return [midnight + 1800, next - 1800].enumerated().map { i, t in
            var s = beat(t, 0, value: 60)
            s.uuid = String(format: "00000000-0000-4000-d000-%012d", Int(t) + i)
            return s
        }
    }

    @Test("devices at UTC-10, UTC+0, UTC+5:30 and in Berlin across its spring DST change: each local day is one bar, named by its local date", arguments: [
        ("Pacific/Honolulu", "2025-03-31"), ("UTC", "2025-03-31"), ("Asia/Kolkata", "2025-03-31"), ("Europe/Berlin", "2025-03-30"), ("Europe/Berlin", "2025-03-31"),
    ])
    func localDays(zone: String, date: String) async throws {
        try await withHousehold { h in
            let chain = try await h.sync(device: "cat-phone", person: "cat") { home in
                try captureIn(try home.open(), zone: zone, samples: Self.edges(of: date, in: zone))
            }
            let c = h.browser()
            try await c.signIn("cat", Household.password)
            let reply = try await c.request("GET", "/api/v1/chains/\(chain)/types/HKQuantityTypeIdentifierHeartRate")
            #expect(reply.status == 200)
            let json = try #require(try JSONSerialization.jsonObject(with: Data(reply.body.utf8)) as? [String: Any])
            let days = try #require(json["days"] as? [[String: Any]])
            #expect(days.map { $0["day"] as? String } == [date], "\(zone): \(days)")
            #expect(days.first?["records"] as? Int == 2)
        }
    }
}
