import Foundation
import Testing
import HealthProbeServer
import HealthProbeTestSupport
@testable import HealthProbeWeb

/// Record lists filter by type and by the device's local days, page after page.
@Suite("Record filters", .serialized)
struct RecordFilterTests {
    @Test("what was visible, of one type on one local day: every row matches, the next page keeps the filter")
    func visibleByTypeAndDay() async throws {
        try await withHousehold { h in
            let ann = h.chains["ann-phone"]!
            let a = h.browser()
            try await a.signIn("ann", Household.password)
            let all = try #require(try JSONSerialization.jsonObject(with: Data(try await a.request("GET", "/api/v1/chains/\(ann)/observations/2/visible").body.utf8)) as? [String: Any])
            let first = try #require((all["records"] as? [[String: Any]])?.first)
            let type = try #require(first["type_identifier"] as? String)
            let day = String(try #require(first["local_start"] as? String).prefix(10))
            var path = "/api/v1/chains/\(ann)/observations/2/visible?type=\(type)&from=\(day)&to=\(day)"
            var seen = 0
            while true {
                let page = try #require(try JSONSerialization.jsonObject(with: Data(try await a.request("GET", path).body.utf8)) as? [String: Any])
                let records = page["records"] as? [[String: Any]] ?? []
                for r in records {
                    #expect(r["type_identifier"] as? String == type)
                    #expect((r["local_start"] as? String)?.hasPrefix(day) == true, "\(r)")
                }
                seen += records.count
                guard let next = page["next"] as? String else { break }
                path = "/api/v1/chains/\(ann)/observations/2/visible?type=\(type)&from=\(day)&to=\(day)&cursor=\(next.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!)"
            }
            #expect(seen > 0)
            let html = try await a.request("GET", "/chains/\(ann)/observations/2/visible?type=\(type)&from=\(day)&to=\(day)").body
            #expect(html.contains("value=\"\(type)\" selected") && html.contains("name=\"from\" value=\"\(day)\""))
            #expect(try await a.request("GET", "/chains/\(ann)/observations/2/visible?from=2025-13-01").status == 400)
            // An empty type or cursor counts as absent (a form's "all types" sends `type=`), as
            // docs/openapi.json says; a cursor is a position, so one of the right form starts a
            // page wherever it points, and one of another form is refused.
            let unfiltered = try await a.request("GET", "/api/v1/chains/\(ann)/observations/2/visible?type=&cursor=")
            let plain = try await a.request("GET", "/api/v1/chains/\(ann)/observations/2/visible").body
            #expect(unfiltered.status == 200 && unfiltered.body == plain)
            let anywhere = try await a.request("GET", "/api/v1/chains/\(ann)/observations/2/visible?cursor=1:" + String(repeating: "0", count: 64))
            #expect(anywhere.status == 200, "\(anywhere.status) \(anywhere.body.prefix(200))")
            for bad in ["0:" + String(repeating: "0", count: 64), "01:" + String(repeating: "0", count: 64), "+1:" + String(repeating: "0", count: 64),
                        "1:00", "1:" + String(repeating: "A", count: 64), ":" + String(repeating: "0", count: 64)] {
                #expect(try await a.request("GET", "/api/v1/chains/\(ann)/observations/2/visible?cursor=\(bad)").status == 400, "\(bad)")
            }
        }
    }
}
