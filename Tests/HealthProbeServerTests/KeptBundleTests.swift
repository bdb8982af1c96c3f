import Foundation
import Testing
@testable import HealthProbeArchive
@testable import HealthProbeServer
import HealthProbeProtocol
import HealthProbeNode
import HealthProbeTestSupport

/// What the server keeps of a received bundle: its parts as they arrived, one gzip
/// member each, which re-verify to the logged manifest hash and show damage.
@Suite("Kept bundles")
struct KeptBundleTests {
    @Test("a synced bundle is kept as gzip members (gzip -dc gives its lines, which verify); a damaged byte is named by hp-server verify")
    func keptAsReceived() async throws {
        let data = TempDir()
        let home = TempHome()
        try simulate(home, days: 2)
        var chain = ""
        try await withServer(data) { server in
            let e = try await server.enroll("a")
            _ = try await SyncClient(node: try home.open(), outbox: home.root + "/outbox").sync(e)
            chain = try #require(try server.store.chains().first)
        }
        let store = ServerStore(root: data.path)
        let kept = store.bundlePath(chain, sequence: 1)
        #expect(store.storedBundlePath(chain, sequence: 1) == kept)
        #expect(GzipParts.isGzip(kept))
        #expect(try ServerVerifier.run(store, mode: .full).allSatisfy(\.ok))

        // Any gzip tool reads it; its lines are the bundle the log holds.
        let plain = data.file("plain.jsonl")
        let gzip = Process()
        gzip.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        gzip.arguments = ["sh", "-c", "gzip -dc \"$0\" > \"$1\"", kept, plain]
        try gzip.run()
        gzip.waitUntilExit()
        #expect(gzip.terminationStatus == 0)
        let logged = try store.readReplica(chain) { db in try String.fetchOne(db, sql: "SELECT manifest_hash FROM bundle_log WHERE sequence = 1") }
        let (header, verifier) = try BundleFile.verify(plain, expected: logged)
        #expect(header.sequence == 1 && header.deviceChainHash == chain)
        #expect(verifier.itemCount > 0)
        // Smaller than the lines (a first sync of a million samples: 283 MB against 1.74 GB).
        let keptSize = try #require(try FileManager.default.attributesOfItem(atPath: kept)[.size] as? Int)
        let plainSize = try #require(try FileManager.default.attributesOfItem(atPath: plain)[.size] as? Int)
        #expect(keptSize * 3 < plainSize, "\(keptSize) bytes kept for \(plainSize)")

        // One byte of deflate data damaged (a new file: the replica's hard link is not touched).
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: kept)))
        bytes[bytes.count / 2] ^= 0x10
        try FileManager.default.removeItem(atPath: kept)
        try Data(bytes).write(to: URL(fileURLWithPath: kept))
        let report = try ServerVerifier.run(store, mode: .full)
        let stored = try #require(report.first?.checks.first { $0.name == "stored_bundles" })
        #expect(stored.status == .problem)
        #expect(stored.detail.contains("sequence 1") && stored.detail.contains("damaged at byte"), "\(stored.detail)")
    }

    /// A kept file of `parts` (each one gzip member, as the server writes them).
    static func keptFile(_ parts: [[UInt8]], in dir: TempDir) throws -> String {
        var out: [UInt8] = []
        for p in parts {
            let zlib = try BundlePartCodec.compress(p)
            try zlib.withUnsafeBytes { z in try p.withUnsafeBytes { try GzipParts.appendMember(zlib: z, inflated: $0, newlines: p.count { $0 == 0x0A }, to: &out) } }
        }
        let path = dir.file("\(UUID().uuidString).jsonl.gz")
        try Data(out).write(to: URL(fileURLWithPath: path))
        return path
    }

    /// The bytes of the restore parts of `path`, each inflated and checked to end at a line boundary.
    static func restored(_ path: String) throws -> (parts: [[UInt8]], declared: RestoreParts) {
        let parts = try RestoreParts(path: path)
        var out: [[UInt8]] = []
        while let part = try parts.next() {
            #expect(part.index == out.count)
            let bytes = try BundlePartCodec.inflate(part.zlib, declaredSize: part.size)
            #expect(bytes.last == 0x0A, "part \(part.index) ends inside a line")
            out.append(bytes)
        }
        return (out, parts)
    }

    @Test("a kept bundle whose members end at line boundaries is restored member for member (each the part as received); one with a member ending inside a line is cut anew at line boundaries; both give the bundle's bytes")
    func restorePartsFromMembers() throws {
        let dir = TempDir()
        let lines: [[UInt8]] = (0..<5_000).map { i in Array("{\"line\":\(i),\"text\":\"\(String(repeating: "x", count: i % 300))\"}".utf8) }
        func joined(_ some: ArraySlice<[UInt8]>) -> [UInt8] { some.reduce(into: [UInt8]()) { $0 += $1; $0.append(0x0A) } }
        let bytes = joined(lines[...])
        // Whole lines: parts of 1,000 lines.
        let whole: [[UInt8]] = stride(from: 0, to: lines.count, by: 1_000).map { joined(lines[$0..<min($0 + 1_000, lines.count)]) }
        let a = try Self.restored(try Self.keptFile(whole, in: dir))
        #expect(a.parts == whole)
        #expect(a.declared.parts == whole.count && a.declared.lines == lines.count && a.declared.size == bytes.count)
        // A member ending inside a line: the parts are cut anew (one, under 8 MiB).
        let cut: [[UInt8]] = [Array(bytes[0..<1_000]), Array(bytes[1_000...])]
        let b = try Self.restored(try Self.keptFile(cut, in: dir))
        #expect(b.parts.reduce([], +) == bytes)
        #expect(b.declared.parts == b.parts.count && b.declared.lines == lines.count && b.declared.size == bytes.count)
        // A file cut short after whole members is damaged, and said so.
        let path = try Self.keptFile(whole, in: dir)
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        try data.prefix(data.count - 3).write(to: URL(fileURLWithPath: path))
        #expect { _ = try RestoreParts(path: path) } throws: { "\($0)".contains("damaged at byte") }
        // Members written before their headers recorded their data are inflated by the first pass, and give the same parts.
        let former = try Self.formerMembers(try Self.keptFile(whole, in: dir))
        let c = try Self.restored(former)
        #expect(c.parts == whole && c.declared.parts == whole.count && c.declared.lines == lines.count && c.declared.size == bytes.count)
    }

    @Test("a kept bundle's parts are announced from its members' headers alone: damaged data behind intact headers is found as its member is sent, and named; the members before it go out")
    func damageFoundWhileSent() throws {
        let dir = TempDir()
        let parts: [[UInt8]] = (0..<4).map { p in (0..<500).flatMap { i in Array("{\"part\":\(p),\"line\":\(i)}\n".utf8) } }
        let path = try Self.keptFile(parts, in: dir)
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        // The third member's data: past two members and its own 33-byte header.
        var at = 0
        for _ in 0..<2 { at += Int(bytes[at + 16]) | Int(bytes[at + 17]) << 8 | Int(bytes[at + 18]) << 16 }
        bytes[at + 33 + 20] ^= 0x55
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        let declared = try RestoreParts(path: path)
        #expect(declared.parts == 4 && declared.lines == 2_000 && declared.size == parts.joined().count)
        #expect(try declared.next()?.index == 0)
        #expect(try declared.next()?.index == 1)
        #expect { _ = try declared.next() } throws: { "\($0)".contains("damaged at byte \(at)") && "\($0)".contains("hp-server verify --full") }
        // A header whose record no longer matches its data (a line count changed) is found the same way.
        var record = [UInt8](try Data(contentsOf: URL(fileURLWithPath: try Self.keptFile(parts, in: dir))))
        record[28] ^= 1
        let recordPath = dir.file("record.jsonl.gz")
        try Data(record).write(to: URL(fileURLWithPath: recordPath))
        let changed = try RestoreParts(path: recordPath)
        #expect(changed.lines == 2_000 + (record[28] & 1 == 1 ? 1 : -1))
        #expect { _ = try changed.next() } throws: { "\($0)".contains("damaged at byte 0") && "\($0)".contains("line count") }
    }

    @Test("a kept file replaced after its parts were announced (as many members, each with a true record, of the same sizes, other bytes) is refused as changed while it was sent")
    func replacedWhileSent() throws {
        let dir = TempDir()
        let parts: [[UInt8]] = (0..<3).map { p in (0..<400).flatMap { i in Array("{\"part\":\(p),\"line\":\(i)}\n".utf8) } }
        let path = try Self.keptFile(parts, in: dir)
        let declared = try RestoreParts(path: path)
        #expect(declared.parts == 3)
        // The same sizes and lines, other bytes: only the Adler-32 tells them apart.
        let other = parts.map { Array(String(decoding: $0, as: UTF8.self).replacingOccurrences(of: "part", with: "PART").utf8) }
        let replacement = try Self.keptFile(other, in: dir)
        try FileManager.default.removeItem(atPath: path)
        try FileManager.default.moveItem(atPath: replacement, toPath: path)
        #expect { _ = try declared.next() } throws: { "\($0)".contains("changed while it was sent") }
    }

    /// The kept file at `path` rewritten as the server wrote members before 2026-12-01; the new file's path.
    static func formerMembers(_ path: String) throws -> String {
        let former = path + ".former.jsonl.gz"
        try Data(FormerGzipMembers.rewrite([UInt8](try Data(contentsOf: URL(fileURLWithPath: path))))).write(to: URL(fileURLWithPath: former))
        return former
    }
}
