import Foundation
import Testing
import HealthProbeTestSupport

/// What a new administrator gets wrong first (a mistyped path, a directory meant for something
/// else, a backup target inside what it backs up): each is refused saying what is wrong and
/// how to go on, and nothing is written.
@Suite("Administrators' mistakes")
struct AdminMistakeTests {
    @Test("a --data path that does not exist, or is not a data directory, is named as such; init refuses a directory holding something else (a config.json alone is fine) and writes nothing")
    func dataDirectories() throws {
        let dir = TempDir()
        let missing = try hpServer(["verify", "--data", dir.file("nope")])
        #expect(missing.0 != 0 && missing.2.contains("\(dir.file("nope")) does not exist: check --data"), "\(missing.2)")
        try FileManager.default.createDirectory(atPath: dir.file("backups/first"), withIntermediateDirectories: true)
        let other = try hpServer(["verify", "--data", dir.file("backups")])
        #expect(other.0 != 0 && other.2.contains("is not a HealthProbe server data directory (it has no healthprobe-server marker): check --data"), "\(other.2)")
        let initThere = try hpServer(["init", "--data", dir.file("backups")])
        #expect(initThere.0 != 0 && initThere.2.contains("is neither empty nor a HealthProbe server data directory (it holds first)"), "\(initThere.2)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.file("backups")) == ["first"], "nothing was written")

        try FileManager.default.createDirectory(atPath: dir.file("data"), withIntermediateDirectories: true)
        try "{}".write(toFile: dir.file("data/config.json"), atomically: true, encoding: .utf8)
        #expect(try hpServer(["init", "--data", dir.file("data")]).0 == 0)
        #expect(try hpServer(["init", "--data", dir.file("data")]).0 == 0, "init again on a data directory changes nothing")
        // What an init stopped before its marker leaves is its own: run again, it finishes.
        try FileManager.default.createDirectory(atPath: dir.file("half/chains"), withIntermediateDirectories: true)
        try Data().write(to: URL(fileURLWithPath: dir.file("half/server.sqlite")))
        #expect(try hpServer(["init", "--data", dir.file("half")]).0 == 0)
    }

    @Test("a backup into the data directory is refused; a restore from a path that does not exist says so; a restore with --json keeps stdout one JSON document and says what to do next on stderr")
    func backupAndRestorePaths() throws {
        let dir = TempDir()
        let data = dir.file("data")
        #expect(try hpServer(["init", "--data", data]).0 == 0)
        let inside = try hpServer(["backup", "--data", data, "--to", data + "/backups/today"])
        #expect(inside.0 != 0 && inside.2.contains("--to must be outside the data directory"), "\(inside.2)")
        #expect(!FileManager.default.fileExists(atPath: data + "/backups"))

        // Through a link whose `..` leads back inside: still inside.
        try FileManager.default.createDirectory(atPath: data + "/chains/deep", withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: dir.file("link"), withDestinationPath: data + "/chains/deep")
        let viaLink = try hpServer(["backup", "--data", data, "--to", dir.file("link/../today")])
        #expect(viaLink.0 != 0 && viaLink.2.contains("--to must be outside the data directory"), "\(viaLink.2)")
        try FileManager.default.removeItem(atPath: data + "/chains/deep")
        // A scheduled backup_to inside it stops serve before it serves, naming the key.
        try #"{"backup_to": "\#(data)/backups"}"#.write(toFile: data + "/config.json", atomically: true, encoding: .utf8)
        #expect { _ = try ServerProcess(data: data, timeout: 20) } throws: { "\($0)".contains("backup_to \(data)/backups lies inside the data directory") }
        try FileManager.default.removeItem(atPath: data + "/config.json")

        let nowhere = try hpServer(["restore", "--from", dir.file("nope"), "--data", dir.file("restored")])
        #expect(nowhere.0 != 0 && nowhere.2.contains("--from \(dir.file("nope")) does not exist"), "\(nowhere.2)")

        #expect(try hpServer(["backup", "--data", data, "--to", dir.file("backup")]).0 == 0)
        let r = try hpServer(["restore", "--from", dir.file("backup"), "--data", dir.file("restored"), "--json"])
        #expect(r.0 == 0, "\(r.2)")
        #expect((try? JSONSerialization.jsonObject(with: Data(r.1.utf8))) != nil, "stdout is one JSON document: \(r.1)")
        #expect(r.2.contains("settings: none were restored") && r.2.contains("hp-server adopt --data \(dir.file("restored"))"), "\(r.2)")
    }

    @Test("a restore token for a chain prefix of fewer than 8 hex digits is refused before anything is looked up")
    func shortRestorePrefix() throws {
        let dir = TempDir()
        #expect(try hpServer(["init", "--data", dir.path]).0 == 0)
        for prefix in ["4", "3f2a91", "not-hex-at-all"] {
            let r = try hpServer(["enroll", "--data", dir.path, "--name", "new-phone", "--restore-chain", prefix])
            #expect(r.0 != 0 && r.2.contains("--restore-chain must be at least 8 hex digits of the chain hash"), "\(r.2)")
        }
    }
}
