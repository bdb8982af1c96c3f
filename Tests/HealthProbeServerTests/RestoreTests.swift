import Foundation
import Synchronization
import Testing
@testable import HealthProbeArchive
@testable import HealthProbeServer
import HealthProbeProtocol
import HealthProbeTestSupport

/// `hp-server restore` trusts nothing in a backup: each damage is refused, named, and
/// leaves no directory `serve` would take.
@Suite("Restore from a backup directory")
struct RestoreTests {
    /// A data directory with the committed two-bundle chain, and a backup of it.
    func backedUp() throws -> (data: TempDir, backup: TempDir, chain: String, report: ServerBackup.Report) {
        let data = TempDir(), backup = TempDir()
        let store = ServerStore(root: data.path)
        try store.create()
        var chain = ""
        for name in ["chain/1.jsonl", "chain/2.jsonl"] {
            let path = vectorURL("bundles/" + name).path
            let (_, verifier) = try BundleFile.verify(path, expected: nil)
            chain = try store.apply(file: path, manifestHash: verifier.manifestHash ?? "", now: 1_750_000_000).chain
        }
        let report = try ServerBackup.run(store, to: backup.path + "/b")
        return (data, backup, chain, report)
    }

    @Test("a backup restores to the same digest; a second restore into the same directory is refused")
    func roundTrip() async throws {
        let (_, backup, chain, report) = try backedUp()
        #expect(report.chains.map(\.chain) == [chain] && report.chains[0].bundles == 2)
        let target = TempDir()
        let told = Mutex<[[Int]]>([])
        let restored = try await ServerRestore.run(from: DirectoryRestoreSource(path: backup.path + "/b"), to: target.path + "/r",
                                                   progress: { applied, of in told.withLock { $0.append([applied, of]) } })
        #expect(restored.chains.count == 1 && restored.chains[0].digest == report.chains[0].digest && restored.chains[0].digest != nil)
        #expect(told.withLock { $0 } == [[1, 2], [2, 2]], "progress after each bundle applied, of all the chains' bundles")
        #expect(try ServerVerifier.run(ServerStore(root: target.path + "/r"), mode: .full).allSatisfy(\.ok))
        await #expect { try await ServerRestore.run(from: DirectoryRestoreSource(path: backup.path + "/b"), to: target.path + "/r") } throws: { "\($0)".contains("not empty") }
    }

    @Test("a second restore into a directory another has begun is refused and removes nothing of it; a refused restore removes only what it wrote, its marker last")
    func concurrentAndKept() async throws {
        let (_, backup, _, _) = try backedUp()
        let target = TempDir()
        // Another restore has begun here (its marker written, created exclusively).
        try UnfinishedRestore.begin(target.path, source: "another", now: 0)
        #expect { try UnfinishedRestore.begin(target.path, source: "this one", now: 1) } throws: { "\($0)".contains("still running or did not finish") }
        await #expect { try await ServerRestore.run(from: DirectoryRestoreSource(path: backup.path + "/b"), to: target.path) } throws: {
            "\($0)".contains("still running or did not finish")
        }
        #expect(try String(contentsOfFile: UnfinishedRestore.path(target.path), encoding: .utf8).contains("from another"), "the other's marker stays")
        // A refused restore removes what it wrote, its marker last, and leaves the rest: the
        // config an administrator copied in meanwhile, and the directory they made.
        let other = TempDir()
        try UnfinishedRestore.begin(other.path, source: "this", now: 0)
        for dir in ["chains/abc", "tls", "cache"] { try FileManager.default.createDirectory(atPath: other.path + "/" + dir, withIntermediateDirectories: true) }
        for file in ["server.sqlite", "server.sqlite-wal", "config.json"] { try Data("x".utf8).write(to: URL(fileURLWithPath: other.path + "/" + file)) }
        ServerRestore.removeWritten(other.path, existed: true)
        #expect(try FileManager.default.contentsOfDirectory(atPath: other.path) == ["config.json"])
    }

    @Test("an altered bundle (the first, or a later one), one with bytes after its last member, a missing one, one in another's place, a damaged registry and a wrong recorded digest are each refused by name")
    func hostile() async throws {
        let fm = FileManager.default
        for damage in ["altered", "first", "trailing", "missing", "swapped", "registry", "digest"] {
            let (_, backup, chain, _) = try backedUp()
            let b = ServerStore(root: backup.path + "/b")
            let needle: String
            switch damage {
            case "altered", "first":
                // The first is refused while the next bundle is fetched: that fetch ends and its file goes too.
                let sequence = damage == "first" ? 1 : 2
                let path = try #require(b.storedBundlePath(chain, sequence: sequence))
                var bytes = try Data(contentsOf: URL(fileURLWithPath: path))
                bytes[bytes.count / 2] ^= 0x20
                try bytes.write(to: URL(fileURLWithPath: path))
                needle = "sequence \(sequence) ("
            case "trailing":
                // Kept as the server keeps what it receives (gzip members), every line and the
                // trailer intact, then junk after the last member.
                let plain = try #require(b.storedBundlePath(chain, sequence: 2))
                let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: plain)))
                var kept: [UInt8] = []
                let zlib = try BundlePartCodec.compress(bytes)
                try zlib.withUnsafeBytes { z in try bytes.withUnsafeBytes { try GzipParts.appendMember(zlib: z, inflated: $0, newlines: bytes.count { $0 == 0x0A }, to: &kept) } }
                try fm.removeItem(atPath: plain)
                let path = b.bundlePath(chain, sequence: 2, gzip: true)
                try Data(kept + [UInt8](repeating: 0x41, count: 64)).write(to: URL(fileURLWithPath: path))
                #expect(GzipParts.isGzip(path) && b.storedBundlePath(chain, sequence: 2) == path)
                needle = "the kept bundle is damaged at byte"
            case "swapped":
                // Bundle 2's bytes where bundle 1 belongs: each verifies, but not in that place.
                let first = try #require(b.storedBundlePath(chain, sequence: 1)), second = try #require(b.storedBundlePath(chain, sequence: 2))
                try fm.removeItem(atPath: first)
                try fm.copyItem(atPath: second, toPath: first)
                needle = "the header's sequence 2 is not 1"
            case "missing":
                try fm.removeItem(atPath: try #require(b.storedBundlePath(chain, sequence: 1)))
                needle = "sequence 1 is missing"
            case "registry":
                try Data(repeating: 0x41, count: 8192).write(to: URL(fileURLWithPath: b.registryPath))
                needle = "registry"
            default:
                let manifest = backup.path + "/b/" + ServerBackup.manifestName
                let text = try String(contentsOfFile: manifest, encoding: .utf8)
                let digest = try #require(text.range(of: #""digest" : "[0-9a-f]{64}""#, options: .regularExpression))
                try text.replacingCharacters(in: digest, with: "\"digest\" : \"" + String(repeating: "0", count: 64) + "\"").write(toFile: manifest, atomically: true, encoding: .utf8)
                needle = "backup recorded"
            }
            let target = TempDir()
            await #expect { try await ServerRestore.run(from: DirectoryRestoreSource(path: b.root), to: target.path + "/r") } throws: { "\($0)".contains(needle) }
            #expect(!fm.fileExists(atPath: target.path + "/r/healthprobe-server"), "\(damage): a failed restore is not a data directory")
            let left = (try? fm.contentsOfDirectory(atPath: target.path + "/r/quarantine")) ?? []
            #expect(left.isEmpty, "\(damage): fetched bundles left behind: \(left)")
        }
    }
}
