import Foundation
import GRDB
import Testing
import HealthProbeTestSupport
import HealthProbeArchive

/// A replica written at schema 8 (the schema-8 build's archive of `Tests/fixtures/archive-v8`,
/// placed as a chain's replica): read-only commands refuse it with the fix, and
/// `hp-server serve` migrates it before it listens.
@Suite("hp-server with a schema-8 replica", .blocksOnTools)
struct ReplicaMigrationTests {
    /// A server data directory whose one chain's replica is the schema-8 fixture archive.
    static func schema8Replica() throws -> (data: TempDir, chain: String, replica: String) {
        let data = TempDir()
        #expect(try hpServer(["init", "--data", data.path]).0 == 0)
        let chain = try ArchiveFixtureV8.chainHash()
        try FileManager.default.createDirectory(atPath: data.path + "/chains/\(chain)", withIntermediateDirectories: true)
        let replica = data.path + "/chains/\(chain)/replica.sqlite"
        try ArchiveFixtureV8.writeArchive(to: replica)
        return (data, chain, replica)
    }

    @Test("summary refuses the old replica and names serve; serve migrates it before it listens; then summary reads it")
    func serveMigrates() throws {
        let (data, _, replica) = try Self.schema8Replica()
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

    @Test("compact: refused while a server serves; stopped, it returns the migrated replica's free pages and the replica still answers")
    func compactAfterMigration() throws {
        let (data, chain, replica) = try Self.schema8Replica()
        let summaryBefore: String
        do {
            let server = try ServerProcess(data: data.path)
            #expect(server.port > 0)
            let refused = try hpServer(["compact", "--data", data.path])
            #expect(refused.0 != 0 && refused.2.contains("stop it before compacting"), "\(refused.2)")
            summaryBefore = try hpServer(["summary", "--data", data.path, "--json"]).1
        }
        let free = try DatabaseQueue(path: replica).read { try Int.fetchOne($0, sql: "PRAGMA freelist_count")! }
        #expect(free > 0, "the migration rebuilt tables")
        let r = try hpServer(["compact", "--data", data.path, "--json"])
        #expect(r.0 == 0, "\(r.2)")
        let reports = try #require(try JSONSerialization.jsonObject(with: Data(r.1.utf8)) as? [[String: Any]])
        let report = try #require(reports.first?["report"] as? [String: Any])
        #expect(reports.count == 1 && reports.first?["chain"] as? String == chain)
        #expect(report["compacted"] as? Bool == true && report["free_pages_before"] as? Int == free && report["digests_compared"] as? Int == 1)
        #expect(try DatabaseQueue(path: replica).read { try Int.fetchOne($0, sql: "PRAGMA freelist_count")! } == 0)
        #expect(summaryBefore.contains("\"visible\""))
        #expect(try hpServer(["summary", "--data", data.path, "--json"]).1 == summaryBefore, "the household summary reads the same")
        let verify = try hpServer(["verify", "--data", data.path, "--full"])
        #expect(verify.0 == 0, "\(verify.1) \(verify.2)")
        let table = try hpServer(["compact", "--data", data.path])
        #expect(table.0 == 0 && table.1.contains("nothing to compact"), "\(table.1)")
    }

    @Test("compact on a replica at an older schema migrates it first, says so, then compacts it")
    func compactMigratesFirst() throws {
        let (data, chain, replica) = try Self.schema8Replica()
        let r = try hpServer(["compact", "--data", data.path, "--chain", String(chain.prefix(10))])
        #expect(r.0 == 0, "\(r.2)")
        #expect(r.2.contains("migrating the replica of chain \(chain.prefix(16)) from schema 8 to \(ArchiveMigrations.latestVersion) first"), "\(r.2)")
        #expect(r.1.contains("chain \(chain.prefix(16)): ") && r.1.contains("free pages returned to the disk"), "\(r.1)")
        #expect(try ArchiveFixtureV8.schemaVersion(replica) == ArchiveMigrations.latestVersion)
        #expect(try hpServer(["verify", "--data", data.path, "--full"]).0 == 0)
    }
}
