import Foundation
import Testing
import HealthProbeTestSupport

@Suite("hp-node analysis commands", .blocksOnTools)
struct AnalysisCommandTests {
    func json(_ args: [String]) throws -> Any {
        let r = try hpNode(args)
        #expect(r.0 == 0, "\(args): \(r.2)")
        return try JSONSerialization.jsonObject(with: Data(r.1.utf8))
    }

    @Test("snapshot pages, diff, changes, summary and cache, as tables and JSON; bad flags are refused")
    func commands() throws {
        let home = TempDir()
        let h = ["--home", home.path]
        #expect(try hpNode(h + ["capture", "--simulate", "--days", "10"]).0 == 0)
        #expect(try hpNode(h + ["capture", "--simulate", "--days", "2"]).0 == 0)

        // Snapshot: first page and the next page through the printed cursor.
        let page1 = try json(h + ["snapshot", "--at", "1", "--type", "HKQuantityTypeIdentifierStepCount", "--limit", "5", "--json"]) as? [String: Any]
        #expect((page1?["rows"] as? [Any])?.count == 5)
        let next = try #require(page1?["next"] as? String)
        let page2 = try json(h + ["snapshot", "--at", "1", "--type", "HKQuantityTypeIdentifierStepCount", "--limit", "5", "--after", next, "--json"]) as? [String: Any]
        let first2 = (page2?["rows"] as? [[String: Any]])?.first?["strict_fingerprint"] as? String
        #expect(first2 != nil && first2! > String(next.split(separator: ":")[1]))
        let count = try json(h + ["snapshot", "--at", "1", "--count", "--json"]) as? [String: Any]
        #expect((count?["count"] as? Int ?? 0) > 1000)
        let streamed = try hpNode(h + ["snapshot", "--at", "1", "--all", "--json"]).1.split(separator: "\n")
        #expect(streamed.count == count?["count"] as? Int)

        // Diff and changes.
        let diff = try json(h + ["diff", "1", "2", "--details", "--limit", "3", "--json"]) as? [String: Any]
        #expect(((diff?["counts"] as? [Any])?.count ?? 0) > 0)
        #expect((diff?["entries"] as? [Any])?.count == 3)
        let changes = try json(h + ["changes", "--json"]) as? [String: Any]
        #expect((changes?["types"] as? [Any])?.count == 16)
        #expect(try hpNode(h + ["changes"]).1.contains("new_data"))

        // Summary and daily rows.
        let summary = try json(h + ["summary", "--json"]) as? [[String: Any]]
        #expect(summary?.count == 16)
        let daily = try json(h + ["summary", "--type", "HKQuantityTypeIdentifierStepCount", "--days", "3", "--json"]) as? [[String: Any]]
        #expect((daily?.count ?? 0) >= 3)

        // Cache.
        #expect(try hpNode(h + ["cache", "rebuild"]).1.contains("cached_observation_rows"))
        #expect(try hpNode(h + ["cache", "status"]).1.contains("up to date"))

        // Bad input.
        let bad = try hpNode(h + ["diff", "1", "99"])
        #expect(bad.0 != 0 && bad.2.contains("no observation 99"))
        let badKind = try hpNode(h + ["diff", "1", "2", "--kind", "vanished"])
        #expect(badKind.0 != 0 && badKind.2.contains("--kind"))
        let badCursor = try hpNode(h + ["snapshot", "--after", "nonsense"])
        #expect(badCursor.0 != 0 && badCursor.2.contains("cursor"))
        let badDate = try hpNode(h + ["snapshot", "--from", "yesterday"])
        #expect(badDate.0 != 0 && badDate.2.contains("--from"))
        let badType = try hpNode(h + ["snapshot", "--type", "HKNope"])
        #expect(badType.0 != 0 && badType.2.contains("HKNope"))
    }
}
