import Foundation
import Testing
import HealthProbeArchive
import HealthProbeServer
import HealthProbeTestSupport
@testable import HealthProbeWeb

/// An observation page says one thing per type, and its banner never contradicts the rows.
@Suite("Observation verdicts on the page", .serialized)
struct ObservationVerdictTests {
    @Test("loss in four types at once: the page names the loss, says a many-types shift does not explain it, and gives each row one verdict")
    func lossBesideManyTypesShifting() async throws {
        try await withHousehold { h in
            let day0 = 1_749_945_600.0
            let types = ["HeartRate", "RespiratoryRate", "WalkingHeartRateAverage", "RestingHeartRate"].map { SampleTypeDescriptor("HKQuantityTypeIdentifier" + $0) }
            func samples(_ t: Int, drop: Int) -> [CapturedSample] {
                (0..<(288 - drop)).map { i in
                    var s = beat(day0, i, value: 60 + Double(i % 7))
                    s.uuid = String(format: "00000000-0000-4000-c%03d-%012d", t, i)
                    return s
                }
            }
            func capture(_ node: NodeArchive, drop: Int) throws {
                let session = try CaptureSession.begin(node, context: ObservationContext(triggerReason: .manual, timeZoneIdentifier: nil,
                                                                                         selectedTypes: types.map(\.identifier)))
                for (i, t) in types.enumerated() {
                    let run = try session.beginTypeRun(t, kind: .fullScan)
                    try run.writePage(index: 0, samples: samples(i, drop: drop))
                    try run.complete()
                }
                try session.finish()
            }
            let chain = try await h.sync(device: "cat-phone", person: "cat") { home in
                let node = try home.open()
                try capture(node, drop: 0)
                try capture(node, drop: 40)   // 40 of 288 gone in every type, nothing in their place
            }
            let c = h.browser()
            try await c.signIn("cat", Household.password)
            let api = try await c.request("GET", "/api/v1/chains/\(chain)/observations/2").body
            #expect(api.contains("\"many_types_shifting\":true") && api.contains("\"has_loss\":true"), "\(api)")
            #expect(api.components(separatedBy: "\"verdict\":\"loss\"").count == 5)
            let page = try await c.request("GET", "/chains/\(chain)/observations/2").body
            #expect(page.contains("Loss found"))
            #expect(page.contains("That does not explain the loss above."))
            #expect(!page.contains("not loss"))
            // One verdict cell per row.
            #expect(page.components(separatedBy: "class=\"verdict\">").count == 5)

            // The evidence: the 160 records that disappeared, readable, paged, filtered by type.
            #expect(page.contains("<a href=\"#disappeared\">See the records</a>") && page.contains("<h2 id=\"disappeared\">"))
            #expect(page.contains("<td data-label=\"Type\">Heart rate</td>") && page.contains("beats/min</td>"), "\(page.suffix(3000))")
            #expect(page.contains("Times are the device's own (UTC)") && page.contains("a complete read no longer returned it"))
            #expect(page.components(separatedBy: "<td data-label=\"Why\">a complete read").count - 1 == 100)
            let first = try #require(try JSONSerialization.jsonObject(with: Data(try await c.request("GET", "/api/v1/chains/\(chain)/observations/2/disappeared").body.utf8)) as? [String: Any])
            let records = try #require(first["records"] as? [[String: Any]])
            #expect(records.count == 100 && first["zone"] as? String == "UTC")
            let next = try #require(first["next_after"] as? Int)
            let second = try #require(try JSONSerialization.jsonObject(with: Data(try await c.request("GET", "/api/v1/chains/\(chain)/observations/2/disappeared?after=\(next)").body.utf8)) as? [String: Any])
            #expect((second["records"] as? [[String: Any]])?.count == 60 && second["next_after"] == nil)
            let rhr = try await c.request("GET", "/chains/\(chain)/observations/2?type=HKQuantityTypeIdentifierRestingHeartRate").body
            #expect(rhr.components(separatedBy: "<td data-label=\"Type\">Resting heart rate</td>").count - 1 == 40)
            #expect(!rhr.contains("<td data-label=\"Type\">Heart rate</td>") && rhr.contains("value=\"HKQuantityTypeIdentifierRestingHeartRate\" selected"))
            let row = try #require(records.first)
            #expect(row["type_name"] as? String == "Heart rate" && (row["local_time"] as? String)?.count == 16 && row["evidence"] as? String == "full_scan_absent")
            // Another person's chain stays not found.
            let v = h.browser()
            try await v.signIn("vic", Household.password)
            #expect(try await v.request("GET", "/api/v1/chains/\(chain)/observations/2/disappeared").status == 404)
        }
    }
}
