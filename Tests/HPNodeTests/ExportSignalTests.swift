import Foundation
import GRDB
import Testing
import HealthProbeTestSupport

@Suite("hp-node export and SIGINT", .blocksOnTools)
struct ExportSignalTests {
    @Test("SIGINT during an export: exit 130, no file left, the export recorded as cancelled (with --json, said as JSON), the archive verifies")
    func interrupt() throws {
        let home = TempDir()
        // Enough records that the export is still running when the signal arrives.
        #expect(try hpNode(["--home", home.path, "capture", "--simulate", "--days", "90"]).0 == 0)
        let out = home.file("records.json")
        let p = Process()
        p.executableURL = try toolURL("hp-node")
        p.arguments = ["--home", home.path, "export", "--kind", "observation_records_json", "--out", out, "--json"]
        let stdout = home.file("stdout.json")
        #expect(FileManager.default.createFile(atPath: stdout, contents: nil))
        p.standardOutput = try #require(FileHandle(forWritingAtPath: stdout))
        p.standardError = FileHandle.nullDevice
        try p.run()
        // The partial file appears once the export (and its signal handler) runs.
        let deadline = Date().addingTimeInterval(30)
        while !FileManager.default.fileExists(atPath: out + ".partial") && p.isRunning && Date() < deadline { usleep(500) }
        kill(p.processIdentifier, SIGINT)
        p.waitUntilExit()
        #expect(p.terminationStatus == 130)
        let line = try String(contentsOfFile: stdout, encoding: .utf8)
        #expect(line == #"{"error":{"code":"cancelled","exit_code":130,"message":"export cancelled: no file was written"}}"# + "\n", "\(line)")
        #expect(!FileManager.default.fileExists(atPath: out))
        #expect(!FileManager.default.fileExists(atPath: out + ".partial"))
        let archive = try rawQueue(home.path + "/archive/HealthProbeArchive.sqlite")
        let statuses = try archive.read { db in try String.fetchAll(db, sql: "SELECT status FROM export_manifests") }
        #expect(statuses == ["cancelled"])
        #expect(try hpNode(["--home", home.path, "verify", "--full"]).0 == 0)
    }
}
