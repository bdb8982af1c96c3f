import Foundation
import GRDB
import Testing
@testable import HealthProbeArchive
import HealthProbeTestSupport

@Suite("hp-server administration", .blocksOnTools)
struct ServerAdminTests {
    /// Two nodes (same simulated person, so identical records) whose first two observations reach the server.
    func household() throws -> (TempDir, [TempDir]) {
        let data = TempDir()
        #expect(try hpServer(["init", "--data", data.path]).0 == 0)
        var homes: [TempDir] = []
        for _ in 0..<2 {
            let home = TempDir()
            for days in ["4", "1"] { #expect(try hpNode(["--home", home.path, "capture", "--simulate", "--seed", "9", "--days", days]).0 == 0) }
            for obs in 1...2 {
                let b = try hpNode(["--home", home.path, "bundle", "--at", String(obs), "--out", home.file("b\(obs).jsonl"), "--json"])
                let hash = (try JSONSerialization.jsonObject(with: Data(b.1.utf8)) as? [String: Any])?["manifest_hash"] as? String ?? ""
                #expect(try hpServer(["apply", "--data", data.path, home.file("b\(obs).jsonl"), "--manifest-hash", hash]).0 == 0)
            }
            homes.append(home)
        }
        return (data, homes)
    }

    @Test("summary: chains side by side, sums labelled as sums of chains, identical fingerprints reported, never merged")
    func summary() throws {
        let (data, _) = try household()
        let s = try JSONSerialization.jsonObject(with: Data(try hpServer(["summary", "--data", data.path, "--json"]).1.utf8)) as? [String: Any]
        let chains = try #require(s?["chains"] as? [[String: Any]])
        #expect(chains.count == 2)
        let sums = try #require(s?["household_sum_of_chains"] as? [String: Int])
        let a = chains[0]["visible"] as? [String: Int] ?? [:], b = chains[1]["visible"] as? [String: Int] ?? [:]
        #expect(sums["HKQuantityTypeIdentifierHeartRate"] == (a["HKQuantityTypeIdentifierHeartRate"] ?? 0) + (b["HKQuantityTypeIdentifierHeartRate"] ?? 0))
        let shared = try #require(s?["possibly_shared_sources"] as? [[String: Any]])
        #expect(shared.contains { ($0["identical_strict_fingerprints"] as? Int ?? 0) > 0 })
        let text = try hpServer(["summary", "--data", data.path, "--type", "HKQuantityTypeIdentifierStepCount"]).1
        #expect(text.contains("sum of chains") && text.contains("possibly shared source"))
    }

    @Test("bundles and verify: stored bundles re-verified; a tampered bundle or replica is named, exit 1")
    func verify() throws {
        let (data, _) = try household()
        let chains = try JSONSerialization.jsonObject(with: Data(try hpServer(["chains", "--data", data.path, "--json"]).1.utf8)) as? [[String: Any]]
        let chain = try #require(chains?.first?["chain"] as? String)
        let list = try hpServer(["bundles", "--data", data.path, "--chain", String(chain.prefix(10))])
        #expect(list.0 == 0 && list.1.contains("yes") && !list.1.contains("MISSING"))
        let ok = try hpServer(["verify", "--data", data.path, "--full"])
        #expect(ok.0 == 0, "\(ok.1)\(ok.2)")

        // Tamper with a stored bundle: one value in an item line.
        let path = data.path + "/chains/\(chain)/bundles/00000001.jsonl"
        var lines = try String(contentsOfFile: path, encoding: .utf8).components(separatedBy: "\n")
        let i = try #require(lines.firstIndex { $0.contains("\"numeric_value\":") })
        lines[i] = lines[i].replacingOccurrences(of: "\"numeric_value\":", with: "\"numeric_value\":1")
        try FileManager.default.removeItem(atPath: path)   // a new inode: the hard-linked original is not touched
        try lines.joined(separator: "\n").write(toFile: path, atomically: true, encoding: .utf8)
        let bad = try hpServer(["verify", "--data", data.path, "--chain", String(chain.prefix(10)), "--full"])
        #expect(bad.0 == 1)
        #expect(bad.1.contains("stored_bundles") && bad.1.contains("sequence 1"), "\(bad.1)")

        // Tamper with the other chain's replica.
        let other = try #require((chains?.last?["chain"] as? String))
        let replica = try rawQueue(data.path + "/chains/\(other)/replica.sqlite")
        try replica.write { db in try db.execute(sql: "UPDATE observation_type_summaries SET visible_record_count = visible_record_count + 5") }
        let bad2 = try hpServer(["verify", "--data", data.path, "--chain", String(other.prefix(10))])
        #expect(bad2.0 == 1 && bad2.1.contains("replica_aggregates"), "\(bad2.1)")
        #expect(try hpServer(["verify", "--data", data.path, "--subset", "5/2"]).0 != 0)
    }
}
