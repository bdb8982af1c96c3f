import Foundation
import Testing
@testable import HealthProbeSimulator
import HealthProbeTestSupport

@Suite("hp-node command line", .blocksOnTools)
struct NodeCommandTests {
    @Test("init, capture, observations --json, show, status")
    func basics() throws {
        let home = TempDir()
        #expect(try hpNode(["--home", home.path, "init"]).0 == 0)
        let c = try hpNode(["--home", home.path, "capture", "--simulate", "--days", "3", "--json"])
        #expect(c.0 == 0, "\(c.2)")
        let obs = try JSONSerialization.jsonObject(with: Data(try hpNode(["observations", "--home", home.path, "--json"]).1.utf8)) as? [[String: Any]]
        #expect(obs?.count == 1)
        #expect((obs?.first?["appeared"] as? Int ?? 0) > 1000)
        let s = try hpNode(["--home", home.path, "status"])
        #expect(s.1.contains("observations      1"))
        #expect(try hpNode(["--home", home.path, "show"]).1.contains("Heart rate"))
    }

    @Test("reset needs its confirmation flag; with it, the archive goes and the keys stay")
    func reset() throws {
        let home = TempDir()
        #expect(try hpNode(["--home", home.path, "init"]).0 == 0)
        let refused = try hpNode(["--home", home.path, "reset"])
        #expect(refused.0 != 0)
        #expect(refused.2.contains("--yes-delete-archive"))
        #expect(FileManager.default.fileExists(atPath: home.path + "/archive/HealthProbeArchive.sqlite"))
        #expect(try hpNode(["--home", home.path, "reset", "--yes-delete-archive", "--keep-chain"]).0 == 0)
        #expect(!FileManager.default.fileExists(atPath: home.path + "/archive/HealthProbeArchive.sqlite"))
        #expect(FileManager.default.fileExists(atPath: home.path + "/keys/archive-secret"))
    }

    /// `ok.xml`, a synthetic export of `records` records, and `bad.xml`, the same with the
    /// first record's value made unreadable (one rejected element), in `dir`.
    static func writeExports(records: Int, into dir: TempDir) throws {
        try SyntheticExport(records: records).writeXML(to: dir.file("ok.xml"))
        var text = try String(contentsOfFile: dir.file("ok.xml"), encoding: .utf8)
        let firstRecord = text.range(of: "<Record")!.upperBound
        text = text.replacingOccurrences(of: "value=\"", with: "value=\"?", options: [], range: text.range(of: "value=\"", range: firstRecord..<text.endIndex))
        try text.write(toFile: dir.file("bad.xml"), atomically: true, encoding: .utf8)
    }

    @Test("import exit statuses: 0 archived, 3 archived with rejected elements, 1 unusable file")
    func importStatuses() throws {
        let home = TempDir(), dir = TempDir()
        try Self.writeExports(records: 50, into: dir)
        try Data("PK\u{3}\u{4}truncated".utf8).write(to: URL(fileURLWithPath: dir.file("broken.zip")))
        #expect(try hpNode(["--home", home.path, "import", dir.file("ok.xml")]).0 == 0)
        let again = try hpNode(["--home", home.path, "import", dir.file("ok.xml")])
        #expect(again.1.contains("no changes"))
        let bad = try hpNode(["--home", home.path, "import", dir.file("bad.xml")])
        #expect(bad.0 == 3)
        #expect(bad.1.contains("line "))
        #expect(!bad.1.contains("?"))  // no values in the report
        let broken = try hpNode(["--home", home.path, "import", dir.file("broken.zip")])
        #expect(broken.0 == 1)
        #expect(broken.2.contains("broken.zip"))
    }

    @Test("bundle, verify-bundle and digest")
    func bundles() throws {
        let home = TempDir()
        #expect(try hpNode(["--home", home.path, "capture", "--simulate", "--days", "2"]).0 == 0)
        #expect(try hpNode(["--home", home.path, "capture", "--simulate"]).0 == 0)
        let b = try hpNode(["--home", home.path, "bundle", "--at", "2", "--out", home.file("b.jsonl"), "--json"])
        #expect(b.0 == 0, "\(b.2)")
        let hash = (try JSONSerialization.jsonObject(with: Data(b.1.utf8)) as? [String: Any])?["manifest_hash"] as? String ?? ""
        #expect(hash.count == 64)
        #expect(try hpNode(["verify-bundle", home.file("b.jsonl"), "--manifest-hash", hash]).0 == 0)
        #expect(try hpNode(["verify-bundle", home.file("b.jsonl"), "--manifest-hash", String(repeating: "0", count: 64)]).0 == 1)
        var text = try String(contentsOfFile: home.file("b.jsonl"), encoding: .utf8)
        // A change no rule between members or items catches: only the manifest hash does.
        text = text.replacingOccurrences(of: "\"app_version\":\"", with: "\"app_version\":\"x")
        try text.write(toFile: home.file("b.jsonl"), atomically: true, encoding: .utf8)
        let tampered = try hpNode(["verify-bundle", home.file("b.jsonl"), "--manifest-hash", hash])
        #expect(tampered.0 == 1)
        #expect(tampered.2.contains("manifest hash"), "\(tampered.2)")
        // A completed run made failed keeps its visible count: the bundle contradicts itself, and says where.
        text = text.replacingOccurrences(of: "\"status\":\"completed\"", with: "\"status\":\"failed\"")
        try text.write(toFile: home.file("b.jsonl"), atomically: true, encoding: .utf8)
        let contradicted = try hpNode(["verify-bundle", home.file("b.jsonl"), "--manifest-hash", hash])
        #expect(contradicted.0 == 1)
        #expect(contradicted.2.contains("verified_visible_count") && contradicted.2.contains("line "), "\(contradicted.2)")
        // Without the trailer's newline it is refused too.
        try String(text.dropLast()).write(toFile: home.file("b.jsonl"), atomically: true, encoding: .utf8)
        let unterminated = try hpNode(["verify-bundle", home.file("b.jsonl")])
        #expect(unterminated.0 == 1)
        let d = try hpNode(["--home", home.path, "digest", "--at", "1", "--json"])
        #expect(d.0 == 0)
        #expect(d.1.contains("\"digest\""))
    }

    @Test("hp-node bundles applied with hp-server apply give the same digest; re-apply changes nothing")
    func nodeToServer() throws {
        let home = TempDir(), data = TempDir()
        #expect(try hpServer(["init", "--data", data.path]).0 == 0)
        for days in ["3", "1", "2"] { #expect(try hpNode(["--home", home.path, "capture", "--simulate", "--days", days]).0 == 0) }
        for obs in 1...3 {
            let b = try hpNode(["--home", home.path, "bundle", "--at", String(obs), "--out", home.file("b\(obs).jsonl"), "--json"])
            let hash = (try JSONSerialization.jsonObject(with: Data(b.1.utf8)) as? [String: Any])?["manifest_hash"] as? String ?? ""
            let a = try hpServer(["apply", "--data", data.path, home.file("b\(obs).jsonl"), "--manifest-hash", hash])
            #expect(a.0 == 0, "\(a.2)")
            #expect(a.1.contains("applied"))
            if obs == 3 {
                #expect(try hpServer(["apply", "--data", data.path, home.file("b3.jsonl"), "--manifest-hash", hash]).1.contains("already applied"))
            }
        }
        let nodeDigest = try hpNode(["--home", home.path, "digest", "--at", "3", "--json"]).1
        let chains = try JSONSerialization.jsonObject(with: Data(try hpServer(["chains", "--data", data.path, "--json"]).1.utf8)) as? [[String: Any]]
        #expect(chains?.count == 1)
        let chain = chains?.first?["chain"] as? String ?? ""
        let serverDigest = try hpServer(["digest", "--data", data.path, "--chain", String(chain.prefix(12)), "--at", "3", "--json"]).1
        func digest(_ s: String) -> String? { (try? JSONSerialization.jsonObject(with: Data(s.utf8)) as? [String: Any])?["digest"] as? String }
        #expect(digest(nodeDigest) != nil)
        #expect(digest(nodeDigest) == digest(serverDigest))
        // Out of order is refused: a fresh server given bundle 2 first.
        let other = TempDir()
        _ = try hpServer(["init", "--data", other.path])
        let b2 = try hpNode(["--home", home.path, "bundle", "--at", "2", "--out", home.file("x.jsonl"), "--json"])
        let h2 = (try JSONSerialization.jsonObject(with: Data(b2.1.utf8)) as? [String: Any])?["manifest_hash"] as? String ?? ""
        let refused = try hpServer(["apply", "--data", other.path, home.file("x.jsonl"), "--manifest-hash", h2])
        #expect(refused.0 != 0)
        #expect(refused.2.contains("expects sequence 1"))
    }

    @Test("hp-server serve: an enrolled node syncs to it over TLS, and SIGTERM stops it gracefully with status 0")
    func serveAndTerminate() throws {
        let data = TempDir(), home = TempDir()
        #expect(try hpServer(["init", "--data", data.path]).0 == 0)
        let server = try ServerProcess(data: data.path)
        let p = server.process, port = server.port
        #expect(try hpNode(["--home", home.path, "capture", "--simulate", "--days", "2"]).0 == 0)
        let unenrolled = try hpNode(["--home", home.path, "sync"])
        #expect(unenrolled.0 != 0 && unenrolled.2.contains("not enrolled"), "\(unenrolled.2)")
        try enrollWithCLI(data: data.path, home: home.path, name: "phone", port: port)
        let sync = try hpNode(["--home", home.path, "sync"])
        #expect(sync.0 == 0, "\(sync.2)")
        #expect(sync.1.contains("sent 1 bundle"))
        let household = try hpNode(["--home", home.path, "household"])
        #expect(household.0 == 0 && household.1.contains("phone"), "\(household.2)")
        let devices = try hpServer(["devices", "--data", data.path])
        #expect(devices.0 == 0 && devices.1.contains("phone") && devices.1.contains("enrolled"))
        #expect(try hpServer(["revoke", "--data", data.path, "phone"]).0 == 0)
        let refused = try hpNode(["--home", home.path, "sync"])
        #expect(refused.0 != 0 && refused.2.contains("not authenticated"), "\(refused.2)")
        #expect(try hpServer(["revoke", "--data", data.path, "nobody"]).0 != 0)
        kill(p.processIdentifier, SIGTERM)
        let stopBy = Date().addingTimeInterval(10)
        while p.isRunning && Date() < stopBy { Thread.sleep(forTimeInterval: 0.05) }
        #expect(!p.isRunning)
        #expect(p.terminationStatus == 0)
    }

    @Test("with --json a failure is one JSON object on stdout (code, message, exit status), the text still on stderr, in hp-node and hp-server; help and commands that print their own result add none; an unwritable stdout loses only the JSON")
    func jsonFailures() throws {
        let home = TempDir()
        #expect(try hpNode(["--home", home.path, "init"]).0 == 0)
        func failure(_ stdout: String) throws -> [String: Any]? {
            try (JSONSerialization.jsonObject(with: Data(stdout.utf8)) as? [String: Any])?["error"] as? [String: Any]
        }
        let missing = try hpNode(["--home", home.path, "--json", "verify-bundle", home.file("no-such-bundle")])
        #expect(missing.0 == 1)
        #expect(missing.2.contains("no-such-bundle"))
        let error = try failure(missing.1)
        #expect(error?["code"] as? String == "not_found")
        #expect((error?["message"] as? String)?.contains("no-such-bundle") == true)
        #expect(error?["exit_code"] as? Int == 1)
        // Refused by the command's own checks, or by the parser: the code is `validation`, the status ArgumentParser's 64.
        for args in [["--home", home.path, "--json", "reset"], ["observations", "--home", home.path, "--json", "--no-such-option"]] {
            let refused = try hpNode(args)
            #expect(refused.0 == 64)
            let e = try failure(refused.1)
            #expect(e?["code"] as? String == "validation")
            #expect(e?["exit_code"] as? Int == 64)
            #expect(refused.2.contains(e?["message"] as? String ?? "-"))
        }
        // Without --json, nothing on stdout.
        #expect(try hpNode(["--home", home.path, "reset"]).1.isEmpty)
        // Help is no failure.
        let help = try hpNode(["--home", home.path, "--json", "status", "--help"])
        #expect(help.0 == 0)
        #expect(!help.1.contains("\"error\""))
        // A command that printed its own result and exits non-zero adds no error: an import
        // with rejected records prints its report and exits 3.
        try Self.writeExports(records: 20, into: home)
        let rejected = try hpNode(["--home", home.path, "--json", "import", home.file("bad.xml")])
        #expect(rejected.0 == 3)
        let report = try JSONSerialization.jsonObject(with: Data(rejected.1.utf8)) as? [String: Any]
        #expect(report != nil && report?["error"] == nil, "\(rejected.1)")
        // hp-server does the same.
        let server = try hpServer(["chains", "--data", home.file("no-server"), "--json"])
        #expect(server.0 == 1)
        #expect(try failure(server.1)?["code"] as? String == "not_found")
        // A stdout that cannot be written (a full disk) loses the JSON, never the text or the status.
        let full = Process()
        full.executableURL = try toolURL("hp-node")
        full.arguments = ["--home", home.path, "--json", "verify-bundle", home.file("no-such-bundle")]
        full.standardOutput = try #require(FileHandle(forWritingAtPath: "/dev/full"))
        let err = Pipe()
        full.standardError = err
        try full.run()
        let stderr = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        full.waitUntilExit()
        #expect(full.terminationStatus == 1 && full.terminationReason == .exit)
        #expect(stderr.contains("no-such-bundle"), "\(stderr)")
    }
}
