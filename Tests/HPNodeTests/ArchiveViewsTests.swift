import Foundation
import Testing
import HealthProbeTestSupport
import HealthProbeArchive
import HealthProbeCanonical

/// The archive read by tools that have only SQLite (docs/archive.md, "Reading an archive
/// without HealthProbe"): Python's `sqlite3` module and the `sqlite3` shell read the
/// fixture archive's views, and their answers are what `hp-node snapshot` and `diff` print.
@Suite("Archive views for outside tools", .blocksOnTools)
struct ArchiveViewsTests {
    /// Runs `executable` found on PATH; nil when it is not installed.
    static func external(_ executable: String, _ args: [String]) throws -> (Int32, String, String)? {
        let paths = (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":")
        guard let found = paths.map({ "\($0)/\(executable)" }).first(where: FileManager.default.isExecutableFile(atPath:)) else { return nil }
        let p = Process()
        p.executableURL = URL(fileURLWithPath: found)
        p.arguments = args
        let out = Pipe(), err = Pipe()
        p.standardOutput = out
        p.standardError = err
        try p.run()
        let o = out.fileHandleForReading.readDataToEndOfFile(), e = err.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        return (p.terminationStatus, String(decoding: o, as: UTF8.self), String(decoding: e, as: UTF8.self))
    }

    /// A JSON value as comparable text: numbers by their value, absent and null alike.
    static func text(_ v: Any?) -> String {
        switch v {
        case nil, is NSNull: return "-"
        case let s as String: return s
        case let n as NSNumber: return String(n.doubleValue)
        default: return "\(v!)"
        }
    }

    /// Reads the views with Python's standard library alone, as docs/archive.md shows.
    static let python = """
    import json, sqlite3, sys
    db = sqlite3.connect("file:" + sys.argv[1] + "?mode=ro", uri=True)
    db.row_factory = sqlite3.Row
    a, b = int(sys.argv[2]), int(sys.argv[3])
    out = {"observations": [dict(r) for r in db.execute("SELECT observation_id, observed_at, observed_at_utc, status FROM readable_observations ORDER BY observation_id")]}
    out["visible"] = {}
    for (o,) in db.execute("SELECT observation_id FROM readable_observations"):
        out["visible"][str(o)] = [dict(r) for r in db.execute(
            "SELECT sample_id, version_id, type_identifier, strict_fingerprint, payload_hash, start_date, start_date_utc, end_date, numeric_value, unit, visible_since "
            "FROM visible_at WHERE observation_id = ? ORDER BY sample_id", (o,))]
    out["diff"] = [dict(r) for r in db.execute(
        "SELECT sample_id, type_identifier, change, before_version_id, after_version_id, before_payload_hash, after_payload_hash "
        "FROM diff_between WHERE from_observation_id = ? AND to_observation_id = ? ORDER BY sample_id", (a, b))]
    out["event_kinds"] = sorted({r[0] for r in db.execute("SELECT event_kind FROM readable_events")})
    out["evidence_kinds"] = sorted({r[0] for r in db.execute("SELECT evidence_kind FROM readable_events WHERE evidence_kind IS NOT NULL")})
    print(json.dumps(out))
    """

    @Test("Python's sqlite3 reads visible_at and diff_between as hp-node snapshot and diff print them")
    func pythonReadsViews() throws {
        let t = TempHome()
        try ArchiveFixtureV8.install(into: t)
        let h = ["--home", t.root]
        #expect(try hpNode(h + ["init", "--json"]).0 == 0)
        let observations = try ArchiveFixtureV8.expected()
        try #require(observations.count >= 5, "the fixture has five observations")
        let (a, b): (Int64, Int64) = (2, 5)
        guard let py = try Self.external("python3", ["-c", Self.python, t.home.archivePath, "\(a)", "\(b)"]) else {
            print("skipped: python3 is not installed"); return
        }
        #expect(py.0 == 0, "\(py.2)")
        let read = try #require(try JSONSerialization.jsonObject(with: Data(py.1.utf8)) as? [String: Any])

        // Observations: ISO 8601 UTC text with milliseconds, equal to the canonical text.
        let obs = try #require(read["observations"] as? [[String: Any]])
        #expect(obs.count == observations.count)
        for o in obs {
            let seconds = try #require(o["observed_at"] as? Double)
            #expect(o["observed_at_utc"] as? String == CanonicalDate.string(seconds))
        }

        // Visible at each observation: the rows `hp-node snapshot --all` streams.
        let visible = try #require(read["visible"] as? [String: [[String: Any]]])
        var compared = 0
        for e in observations {
            let s = try hpNode(h + ["snapshot", "--at", "\(e.id)", "--all", "--json"])
            #expect(s.0 == 0, "\(s.2)")
            let printed = try s.1.split(separator: "\n").map { try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]) }
            let rows = try #require(visible["\(e.id)"])
            #expect(rows.count == e.visibleCount && printed.count == e.visibleCount, "observation \(e.id)")
            func key(_ r: [String: Any]) -> String {
                ["sample_id", "version_id", "type_identifier", "strict_fingerprint", "payload_hash", "start_date", "end_date", "numeric_value", "unit", "visible_since"]
                    .map { Self.text(r[$0]) }.joined(separator: "|")
            }
            let mine = Set(rows.map(key)), theirs = Set(printed.map(key))
            #expect(mine == theirs, "observation \(e.id): \(mine.subtracting(theirs).sorted().prefix(2)) against \(theirs.subtracting(mine).sorted().prefix(2))")
            for r in rows {
                let start = try #require(r["start_date"] as? Double)
                #expect(r["start_date_utc"] as? String == CanonicalDate.string(start))
            }
            compared += rows.count
        }
        #expect(compared > 100, "the fixture's observations show visible records")

        // The diff between two observations: the entries `hp-node diff --details` prints.
        let d = try hpNode(h + ["diff", "\(a)", "\(b)", "--details", "--limit", "100000", "--json"])
        #expect(d.0 == 0, "\(d.2)")
        let printed = try #require(try JSONSerialization.jsonObject(with: Data(d.1.utf8)) as? [String: Any])
        let entries = try #require(printed["entries"] as? [[String: Any]])
        let rows = try #require(read["diff"] as? [[String: Any]])
        #expect(!entries.isEmpty, "observations \(a) and \(b) differ")
        func printedKey(_ e: [String: Any]) -> String {
            let before = e["before"] as? [String: Any], after = e["after"] as? [String: Any]
            return [Self.text(e["sample_id"]), Self.text(e["type_identifier"]), Self.text(e["kind"]), Self.text(before?["version_id"]),
                    Self.text(after?["version_id"]), Self.text(before?["payload_hash"]), Self.text(after?["payload_hash"])].joined(separator: "|")
        }
        func viewKey(_ r: [String: Any]) -> String {
            ["sample_id", "type_identifier", "change", "before_version_id", "after_version_id", "before_payload_hash", "after_payload_hash"]
                .map { Self.text(r[$0]) }.joined(separator: "|")
        }
        let viewed = rows.map(viewKey), listed = entries.map(printedKey)
        #expect(viewed.count == listed.count && viewed == listed, "\(viewed.count) against \(listed.count): \(zip(viewed, listed).first { $0 != $1 }.map { "\($0) against \($1)" } ?? "")")

        // Kinds by name, never codes.
        let names = Set((read["event_kinds"] as? [String]) ?? [])
        #expect(!names.isEmpty && names.isSubset(of: ["appeared", "disappeared", "representation_changed", "deleted_object"]), "\(names)")
        let evidence = Set((read["evidence_kinds"] as? [String]) ?? [])
        #expect(evidence.isSubset(of: ["reported", "full_scan_absent", "hk_deleted_object"]), "\(evidence)")
    }

    @Test("the sqlite3 shell counts what hp-node snapshot --count counts, read-only")
    func shellReadsViews() throws {
        let t = TempHome()
        try ArchiveFixtureV8.install(into: t)
        let h = ["--home", t.root]
        #expect(try hpNode(h + ["init", "--json"]).0 == 0)
        for e in try ArchiveFixtureV8.expected() {
            guard let r = try Self.external("sqlite3", ["-readonly", t.home.archivePath,
                                                        "SELECT count(*) FROM visible_at WHERE observation_id = \(e.id)"]) else {
                print("skipped: the sqlite3 shell is not installed (apt-get install sqlite3)"); return
            }
            #expect(r.0 == 0, "\(r.2)")
            #expect(Int(r.1.trimmingCharacters(in: .whitespacesAndNewlines)) == e.visibleCount, "observation \(e.id): \(r.1)")
        }
        // The views do not write: the shell refuses to change a read-only archive, and a view is not a table.
        let write = try #require(try Self.external("sqlite3", [t.home.archivePath, "DELETE FROM visible_at"]))
        #expect(write.0 != 0 && write.2.contains("cannot modify visible_at"), "\(write.2)")
    }
}
