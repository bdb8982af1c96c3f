import Foundation
import GRDB
import Testing
@testable import HealthProbeArchive
import HealthProbeTestSupport

@Suite("Home directory and keys")
struct KeyAndHomeTests {
    func chain(_ node: NodeArchive) throws -> (String, Int) {
        try node.archive.writer.read { db in
            let r = try Row.fetchOne(db, sql: "SELECT device_chain_hash, recovered_from_keychain FROM device_chains WHERE id = ?", arguments: [node.deviceChainID])!
            return (r["device_chain_hash"], r["recovered_from_keychain"])
        }
    }

    @Test("keys are 0600 files in a 0700 directory apart from the archive")
    func keyFiles() throws {
        let t = TempHome()
        _ = try t.open()
        let fm = FileManager.default
        for name in [KeyStore.secretFile, KeyStore.chainSeedFile] {
            let attrs = try fm.attributesOfItem(atPath: t.root + "/keys/" + name)
            #expect((attrs[.posixPermissions] as! NSNumber).intValue == 0o600, "\(name)")
            let text = try String(contentsOfFile: t.root + "/keys/" + name, encoding: .utf8)
            #expect(text.trimmingCharacters(in: .newlines).count == 64)
        }
        let dir = try fm.attributesOfItem(atPath: t.root + "/keys")
        #expect((dir[.posixPermissions] as! NSNumber).intValue == 0o700)
        #expect(!t.home.archivePath.hasPrefix(t.root + "/keys"))
        #expect(try fm.contentsOfDirectory(atPath: t.root + "/keys").sorted() == [KeyStore.secretFile, KeyStore.chainSeedFile].sorted())
    }

    @Test("archive deleted, keys kept: the same chain hash, recovered_from_keychain = 1, same UUID hashes")
    func recovery() throws {
        let t = TempHome()
        let (hash1, recovered1): (String, Int)
        let uuidHash1: String?
        do {
            let node = try t.open()
            (hash1, recovered1) = try chain(node)
            try capture(node, samples: [hr(1)])
            uuidHash1 = try node.archive.writer.read { db in try String.fetchOne(db, sql: "SELECT lower(hex(sample_uuid_hash)) FROM samples") }
        }
        #expect(recovered1 == 0)
        try t.home.reset(newChain: false)
        #expect(!t.home.archiveExists)
        let node = try t.open()
        let (hash2, recovered2) = try chain(node)
        #expect(hash2 == hash1)
        #expect(recovered2 == 1)
        try capture(node, samples: [hr(1)])
        #expect(try node.archive.writer.read { db in try String.fetchOne(db, sql: "SELECT lower(hex(sample_uuid_hash)) FROM samples") } == uuidHash1)
    }

    @Test("explicit reset or lost keys: a new chain")
    func newChain() throws {
        let t = TempHome()
        let hash1 = try chain(try t.open()).0
        try t.home.reset(newChain: true)
        let (hash2, recovered2) = try chain(try t.open())
        #expect(hash2 != hash1)
        #expect(recovered2 == 0)
        // Keys directory lost entirely (archive kept): a new chain in the same archive.
        try FileManager.default.removeItem(atPath: t.root + "/keys")
        let node = try t.open()
        let (hash3, _) = try chain(node)
        #expect(hash3 != hash2)
        #expect(try node.archive.writer.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM device_chains") } == 2)
    }

    @Test("a damaged key file is reported, not replaced")
    func damagedKey() throws {
        let t = TempHome()
        _ = try t.open()
        let path = t.root + "/keys/" + KeyStore.secretFile
        try "not hex".write(toFile: path, atomically: true, encoding: .utf8)
        #expect { _ = try t.open() } throws: { e in
            guard let e = e as? ArchiveError else { return false }
            return e.code == .keyDirectory && e.message.contains(path)
        }
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "not hex")
    }

    @Test("home resolution: --home, then HP_HOME, then XDG_DATA_HOME, then ~/.local/share")
    func resolution() {
        #expect(ArchiveHome.resolve(explicit: "/x", environment: ["HP_HOME": "/y"]).root == "/x")
        #expect(ArchiveHome.resolve(explicit: nil, environment: ["HP_HOME": "/y"]).root == "/y")
        #expect(ArchiveHome.resolve(explicit: nil, environment: ["XDG_DATA_HOME": "/d"]).root == "/d/healthprobe")
        #expect(ArchiveHome.resolve(explicit: nil, environment: ["HOME": "/h"]).root == "/h/.local/share/healthprobe")
    }

    @Test("read-only open of a missing archive says how to create one")
    func missingArchive() {
        let t = TempHome()
        #expect { _ = try t.home.open(mode: .readOnly) } throws: { ($0 as? ArchiveError)?.code == .notFound }
    }
}
