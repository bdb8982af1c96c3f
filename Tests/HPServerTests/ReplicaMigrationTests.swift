import Foundation
import GRDB
import Testing
import HealthProbeTestSupport
import HealthProbeArchive

/// A replica written at schema 8 (the schema-8 build's archive of `Tests/fixtures/archive-v8`,
/// placed as a chain's replica): read-only commands refuse it with the fix, and
/// `hp-server serve` migrates it before it listens.
@Suite("hp-server with a schema-8 replica")
struct ReplicaMigrationTests {
    @Test("summary refuses the old replica and names serve; serve migrates it before it listens; then summary reads it")
    func serveMigrates() throws {
        let data = TempDir()
        #expect(try hpServer(["init", "--data", data.path]).0 == 0)
        let chain = try ArchiveFixtureV8.chainHash()
        try FileManager.default.createDirectory(atPath: data.path + "/chains/\(chain)", withIntermediateDirectories: true)
        let replica = data.path + "/chains/\(chain)/replica.sqlite"
        try ArchiveFixtureV8.writeArchive(to: replica)
        let refused = try hpServer(["summary", "--data", data.path, "--json"])
        #expect(refused.0 != 0 && refused.2.contains("hp-server serve"), "\(refused.2)")
        #expect(try ArchiveFixtureV8.schemaVersion(replica) == 8)
        do {
            let server = try ServerProcess(data: data.path)
            #expect(server.port > 0)
            #expect(try ArchiveFixtureV8.schemaVersion(replica) == ArchiveMigrations.latestVersion, "migrated before the server reported its port")
        }
        let summary = try hpServer(["summary", "--data", data.path, "--json"])
        #expect(summary.0 == 0, "\(summary.2)")
        let s = try JSONSerialization.jsonObject(with: Data(summary.1.utf8)) as? [String: Any]
        let chains = try #require(s?["chains"] as? [[String: Any]])
        let visible = chains.first?["visible"] as? [String: Int] ?? [:]
        #expect(chains.count == 1 && visible.values.reduce(0, +) == 727, "the fixture's last observation shows 727 records")
    }
}
