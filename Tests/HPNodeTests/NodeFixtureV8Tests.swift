import Foundation
import Testing
import HealthProbeTestSupport
import HealthProbeArchive

/// `hp-node` on the schema-8 archive the schema-8 build wrote (`Tests/fixtures/archive-v8`):
/// after migration its snapshot, diff and changes JSON are what the schema-8 build printed.
@Suite("hp-node on a schema-8 archive", .blocksOnTools)
struct NodeFixtureV8Tests {
    func json(_ text: String) throws -> NSObject {
        try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? NSObject)
    }

    func recorded(_ name: String) throws -> NSObject {
        try json(String(contentsOf: ArchiveFixtureV8.directory.appendingPathComponent(name), encoding: .utf8))
    }

    @Test("verify passes; digest, bundle, snapshot pages, diff and changes print what the schema-8 build printed")
    func sameOutput() throws {
        let t = TempHome(), out = TempDir()
        try ArchiveFixtureV8.install(into: t)
        let h = ["--home", t.root]
        // Read-only commands refuse the old schema and say how to migrate; `init` migrates.
        let refused = try hpNode(h + ["verify", "--json"])
        #expect(refused.0 != 0 && refused.2.contains("hp-node init"), "\(refused.2)")
        let migrated = try hpNode(h + ["init", "--json"])
        #expect(migrated.2.contains("migrating the archive from schema 8 to \(ArchiveMigrations.latestVersion)"), "\(migrated.2)")
        #expect(!(try hpNode(h + ["init", "--json"])).2.contains("migrating"), "once")
        #expect((try json(migrated.1) as? [String: Any])?["schema_version"] as? Int == ArchiveMigrations.latestVersion, "\(migrated.2)")
        let verify = try hpNode(h + ["verify", "--json"])
        #expect(verify.0 == 0, "\(verify.1) \(verify.2)")
        for e in try ArchiveFixtureV8.expected() {
            let d = try hpNode(h + ["digest", "--at", "\(e.id)", "--json"])
            #expect((try json(d.1) as? [String: Any])?["digest"] as? String == e.digest)
            let b = try hpNode(h + ["bundle", "--at", "\(e.id)", "--out", out.file("b\(e.id)"), "--json"])
            #expect((try json(b.1) as? [String: Any])?["manifest_hash"] as? String == e.bundleManifestHash, "\(b.2)")
        }
        let cases: [([String], String)] = [
            (["snapshot", "--at", "3", "--limit", "100", "--from", "2025-01-08T00:00:00Z", "--json"], "snapshot-3-window.json"),
            (["diff", "4", "5", "--details", "--json"], "diff-4-5.json"),
            (["diff", "2", "3", "--details", "--json"], "diff-2-3.json"),
            (["changes", "4", "5", "--json"], "changes-4-5.json"),
        ]
        for (args, file) in cases {
            let r = try hpNode(h + args)
            #expect(r.0 == 0, "\(args): \(r.2)")
            var printed = try json(r.1)
            if file.hasPrefix("changes") {
                // Members added since (each type's verdict and its reasons, the source rule's
                // and restoration's counts) are checked beside; every recorded member is as it was.
                let report = try #require(printed as? [String: Any])
                let types = try #require(report["types"] as? [[String: Any]])
                #expect(types.allSatisfy { ($0["verdict"] as? String) != nil && ($0["reasons"] as? [String]) != nil })
                var trimmed = report
                trimmed["types"] = types.map { $0.filter { !["verdict", "reasons", "lost_beside_other_source", "restored_records"].contains($0.key) } }
                printed = trimmed as NSDictionary
            }
            #expect(printed == (try recorded(file)), "\(args)")
        }
        // The second page at observation 5, through the cursor the first page printed.
        let page1 = try json(try hpNode(h + ["snapshot", "--at", "5", "--limit", "50", "--json"]).1) as? [String: Any]
        let cursor = try #require(page1?["next"] as? String)
        let page2 = try hpNode(h + ["snapshot", "--at", "5", "--limit", "50", "--after", cursor, "--json"])
        #expect(try json(page2.1) == recorded("snapshot-5-page2.json"))
        // A cursor that is not a type id and 64 hex digits is refused, not read as a position.
        let bad = try hpNode(h + ["snapshot", "--at", "5", "--after", "1:zz", "--json"])
        #expect(bad.0 != 0 && !bad.2.isEmpty)
    }

    @Test("compact: the migrated schema-8 archive's free pages (status names them) go back to the disk; the digests stay; refused while another process writes")
    func compact() throws {
        let t = TempHome()
        try ArchiveFixtureV8.install(into: t)
        let h = ["--home", t.root]
        #expect(try hpNode(h + ["init"]).0 == 0, "migrates")
        let status = try hpNode(h + ["status"])
        #expect(status.1.contains("pages free (`hp-node compact` returns them to the disk)"), "\(status.1)")
        do {
            let writer = try FileLock(path: t.home.archivePath + ".lock")
            let busy = try hpNode(h + ["compact"])
            #expect(busy.0 != 0 && busy.2.contains("in use by another HealthProbe process"), "\(busy.2)")
            withExtendedLifetime(writer) {}
        }
        let r = try hpNode(h + ["compact", "--json"])
        #expect(r.0 == 0, "\(r.2)")
        let report = try #require(try json(r.1) as? [String: Any])
        #expect(report["compacted"] as? Bool == true && report["digests_compared"] as? Int == 1, "\(r.1)")
        let before = try #require(report["pages_before"] as? Int), after = try #require(report["pages_after"] as? Int)
        #expect(after < before && (report["free_pages_before"] as? Int ?? 0) > 0)
        for e in try ArchiveFixtureV8.expected() {
            let d = try hpNode(h + ["digest", "--at", "\(e.id)", "--json"])
            #expect((try json(d.1) as? [String: Any])?["digest"] as? String == e.digest)
        }
        let storage = (try json(try hpNode(h + ["status", "--json"]).1) as? [String: Any])?["storage"] as? [String: Any]
        #expect(storage?["pages"] as? Int == after && (storage?["free_pages"] as? Int ?? 64) < 64, "\(String(describing: storage))")
        #expect(storage?["bytes"] as? Int == after * 4096 && storage?["worth_compacting"] as? Bool == false)
        #expect(!(try hpNode(h + ["status"]).1.contains("hp-node compact")))
        let again = try hpNode(h + ["compact"])
        #expect(again.0 == 0 && again.1.contains("nothing to compact"), "\(again.1)")
        let none = try hpNode(["--home", TempHome().root, "compact"])
        #expect(none.0 != 0 && none.2.contains("nothing to compact"), "\(none.2)")
    }
}
