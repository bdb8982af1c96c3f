import Foundation
import Testing
import HealthProbeArchive
import HealthProbeCanonical
import HealthProbeServer
import HealthProbeTestSupport
import ZIPFoundation
@testable import HealthProbeWeb

/// A chain at a glance (one state, the reason, what to do, times people read), the types
/// by the statistic that fits them, observations picked to compare, and downloads a
/// spreadsheet or a verifier can open: CSV with its companions, and a diff.
@Suite("Glance, readable chain page, downloads", .serialized)
struct GlanceAndDownloadTests {
    @Test("relative times, clock offsets in words, and canonical text read back")
    func words() {
        #expect(ChainGlance.ago(20) == "just now" && ChainGlance.ago(61) == "1 minute ago" && ChainGlance.ago(7_300) == "2 hours ago")
        #expect(ChainGlance.ago(3 * 86_400 + 5) == "3 days ago")
        #expect(ChainGlance.clock(-0.000152826309) == "in step with the server")
        #expect(ChainGlance.clock(42.4) == "42 s ahead of the server" && ChainGlance.clock(-600) == "10 minutes behind the server")
        // The last sync's canonical text is read back by CanonicalDate.parse.
        #expect(CanonicalDate.parse("2026-11-28T10:00:01.250Z") == 1_795_824_000 + 36_001.25)
        #expect(CanonicalDate.parse("2026-11-28") == nil && CanonicalDate.parse("2026-11-28T1x:00:00.000Z") == nil)
    }

    @Test("the overview and chain page: one state per chain with its fix, relative last sync, no raw offsets; loss links to its records")
    func glance() async throws {
        try await withHousehold { h in
            let ann = h.chains["ann-phone"]!
            let a = h.browser()
            try await a.signIn("ann", Household.password)
            let overview = try await a.request("GET", "/").body
            #expect(overview.contains("class=\"glance "), "\(overview.prefix(3000))")
            #expect(overview.contains("just now</time>") || overview.contains("minute ago</time>"))
            #expect(overview.contains("<time datetime=\"20"))
            let api = try #require(try JSONSerialization.jsonObject(with: Data(try await a.request("GET", "/api/v1/overview").body.utf8)) as? [String: Any])
            let cards = (api["people"] as? [[String: Any]] ?? []).flatMap { $0["chains"] as? [[String: Any]] ?? [] }
            #expect(cards.count == 2)
            for card in cards {
                let glance = try #require(card["glance"] as? [String: Any])
                let state = try #require(glance["state"] as? String)
                #expect(["up_to_date", "needs_attention", "loss_found"].contains(state))
                let alerts = card["alerts"] as? [[String: Any]] ?? []
                #expect((state == "loss_found") == alerts.contains { $0["kind"] as? String == "loss" })
                for alert in alerts where ["loss", "disappeared"].contains(alert["kind"] as? String) {
                    #expect((alert["link"] as? String)?.hasSuffix("#disappeared") == true)
                }
            }
            let chain = try await a.request("GET", "/chains/\(ann)").body
            #expect(!chain.contains("s (device minus server)") && chain.contains("Device clock"))
            #expect(chain.contains("in step with the server") || chain.contains("the server</span>"))
            // Each type by the statistic that fits it: totals only for amounts, never a sum of measurements.
            var rows = 0
            for row in chain.components(separatedBy: "<tr>") {
                guard let t = row.range(of: "types/"), let end = row[t.upperBound...].firstIndex(of: "\"") else { continue }
                let type = String(row[t.upperBound..<end])
                let isSum = TypeCatalogue.info(type).statistic == .sum
                if row.contains("total ") { #expect(isSum, "\(type)") }
                if row.contains("highest ") { #expect(!isSum, "\(type)") }
                rows += 1
            }
            #expect(rows >= 2)
            // Two observations picked from the timeline open their diff.
            #expect(chain.contains("name=\"from\" value=\"1\"") && chain.contains("name=\"to\" value=\"2\""))
            let diff = try await a.request("GET", "/chains/\(ann)/diff?from=1&to=2")
            #expect(diff.status == 200 && diff.body.contains("What changed from #1 to #2") && !diff.body.contains("<td data-label=\"Type\" title=\"HKQuantityTypeIdentifierStepCount\">HKQuantity"))
            // The API's rows name each type as the page does.
            let diffAPI = try await a.request("GET", "/api/v1/chains/\(ann)/diff?from=1&to=2")
            let diffPage = try JSONSerialization.jsonObject(with: Data(diffAPI.body.utf8)) as? [String: Any]
            let diffRows = try #require(diffPage?["rows"] as? [[String: Any]])
            #expect(!diffRows.isEmpty)
            for row in diffRows { #expect(row["type_name"] as? String == TypeCatalogue.name(row["type_identifier"] as? String ?? ""), "\(row)") }
        }
    }

    @Test("downloads: CSV zipped with its relationships and manifest verifies; a diff verifies; a diff without bounds is the latest change")
    func downloads() async throws {
        try await withHousehold { h in
            let ann = h.chains["ann-phone"]!
            let a = h.browser()
            try await a.signIn("ann", Household.password)
            let dir = TempDir()
            let csv = try await a.request("GET", "/chains/\(ann)/export?kind=records_csv&at=2")
            #expect(csv.status == 200 && csv.header("Content-Type") == "application/zip", "\(csv.status) \(csv.body.prefix(300))")
            #expect(csv.header("Content-Disposition")?.contains("records_csv-at-2.csv.zip") == true)
            let zipPath = dir.file("export.zip")
            try Data(csv.bytes).write(to: URL(fileURLWithPath: zipPath))
            let zip = try ZIPFoundation.Archive(url: URL(fileURLWithPath: zipPath), accessMode: .read)
            let names = zip.map(\.path).sorted()
            #expect(names.count == 3 && names.contains { $0.hasSuffix(".csv.relationships.csv") } && names.contains { $0.hasSuffix(".csv.manifest.json") }, "\(names)")
            for entry in zip { _ = try zip.extract(entry, to: URL(fileURLWithPath: dir.file(entry.path))) }
            let csvFile = try #require(names.first { $0.hasSuffix(".csv") && !$0.hasSuffix(".relationships.csv") })
            let verified = try ExportVerifier.verify(path: dir.file(csvFile))
            #expect(verified.ok && verified.manifestHash == csv.header("X-HP-Manifest-Hash"), "\(verified.problems)")

            let diff = try await a.request("GET", "/api/v1/chains/\(ann)/export?kind=diff&from=2&to=1")
            #expect(diff.status == 200 && diff.header("Content-Disposition")?.contains("diff-1-to-2.json") == true)
            let diffPath = dir.file("diff.json")
            try Data(diff.bytes).write(to: URL(fileURLWithPath: diffPath))
            let checked = try ExportVerifier.verify(path: diffPath)
            #expect(checked.ok && checked.kind == "observation_diff_json", "\(checked.problems)")
            // Unnamed, `to` is the latest observation and `from` the one before it: the latest change.
            /// The observations an export's header names (`archive.from_observation_id`, `to_observation_id`).
            func span(_ body: String) -> [Int] {
                let export = (try? JSONSerialization.jsonObject(with: Data(body.utf8))) as? [String: Any]
                let archive = export?["archive"] as? [String: Any]
                return ["from_observation_id", "to_observation_id"].compactMap { archive?[$0] as? Int }
            }
            #expect(span(diff.body) == [1, 2], "\(diff.body.prefix(400))")
            let latest = try await a.request("GET", "/api/v1/chains/\(ann)/export?kind=diff")
            #expect(latest.status == 200 && span(latest.body) == [1, 2], "\(latest.status) \(latest.body.prefix(400))")
            #expect(latest.header("Content-Disposition")?.contains("diff-latest.json") == true)
            let onlyTo = try await a.request("GET", "/api/v1/chains/\(ann)/export?kind=diff&to=2")
            #expect(onlyTo.status == 200 && span(onlyTo.body) == [1, 2] && onlyTo.header("Content-Disposition")?.contains("diff-to-2.json") == true)
            let onlyFrom = try await a.request("GET", "/api/v1/chains/\(ann)/export?kind=diff&from=1")
            #expect(onlyFrom.status == 200 && span(onlyFrom.body) == [1, 2] && onlyFrom.header("Content-Disposition")?.contains("diff-1-to-latest.json") == true)
            let first = try await a.request("GET", "/api/v1/chains/\(ann)/export?kind=diff&to=1")
            #expect(first.status == 404 && first.body.contains("is the chain's first"), "\(first.status) \(first.body)")
            let bad = try await a.request("GET", "/api/v1/chains/\(ann)/export?kind=pdf")
            #expect(bad.status == 400 && bad.body.contains("records_csv"))
            // Someone who may not read the chain gets nothing.
            let v = h.browser()
            try await v.signIn("vic", Household.password)
            #expect(try await v.request("GET", "/api/v1/chains/\(ann)/export?kind=records_csv").status == 404)
        }
    }
}
