import Foundation
import Testing
@testable import HealthProbeArchive
@testable import HealthProbeSimulator
import HealthProbeTestSupport

/// The chain-state digest as Protocol/bundles.md section 7 defines it: the committed
/// chain of bundles (edits and deletions), the digest after each, reproduced by the
/// archive and by the reference replay written from the document.
@Suite("Chain-state digest vectors", .serialized)
struct DigestVectorTests {
    struct Entry: Codable, Equatable { var file: String; var manifestHash: String; var digest: String; var visibleCount: Int }
    struct Index: Codable { var bundles: [Entry] }

    static let dir = vectorURL("bundles/chain")

    /// The committed chain's folder: its bundles in `format` (1: `chain/`, 2: `chain-format-2/`).
    static func dir(format: Int) -> URL { format == 2 ? vectorURL("bundles/chain-format-2") : dir }

    /// A fixed-key simulated chain: a first capture, then three that edit, delete and add;
    /// its bundles built in `format`.
    static func chain(format: Int = 1) throws -> (TempHome, [Entry], [[[UInt8]]]) {
        let t = try fixedKeyHome()
        var o = SimulatorCapture.Options()
        o.seed = 8  // a seed whose chain has edits, deletions and closed ranges in four small bundles
        o.types = [SimulatedType.all[5], SimulatedType.all[7], SimulatedType.all[10], SimulatedType.all[15]]
        o.days = 8
        _ = try SimulatorCapture.run(home: t.home, options: o)
        o.days = 3
        for _ in 0..<3 { _ = try SimulatorCapture.run(home: t.home, options: o) }
        let node = try t.open()
        var entries: [Entry] = [], bundles: [[[UInt8]]] = []
        var previous: String?
        for obs in Int64(1)...4 {
            let (lines, hash) = try bundleLines(node, obs, previous: previous, format: format)
            let d = try node.archive.writer.read { db in try ChainStateDigest.compute(db, observationID: obs) }
            entries.append(Entry(file: "\(obs).jsonl", manifestHash: hash, digest: d.digest, visibleCount: d.visibleCount))
            bundles.append(lines)
            previous = hash
        }
        return (t, entries, bundles)
    }

    @Test("the committed chain's digests are the archive's, its bundles the builder's (in bundle format 1 and 2), and the chain edits and deletes",
          arguments: [1, 2])
    func vectors(format: Int) throws {
        let (home, entries, bundles) = try Self.chain(format: format)
        let dir = Self.dir(format: format)
        defer { withExtendedLifetime(home) {} }
        let dec = JSONDecoder(), enc = JSONEncoder()
        dec.keyDecodingStrategy = .convertFromSnakeCase
        enc.keyEncodingStrategy = .convertToSnakeCase
        enc.outputFormatting = [.prettyPrinted, .sortedKeys]
        if ProcessInfo.processInfo.environment["HP_WRITE_VECTORS"] == "1" {
            try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
            for (e, lines) in zip(entries, bundles) {
                try Data(lines.flatMap { $0 + [UInt8(0x0A)] }).write(to: dir.appendingPathComponent(e.file))
            }
            try enc.encode(Index(bundles: entries)).write(to: dir.appendingPathComponent("digests.json"))
        }
        let index = try dec.decode(Index.self, from: Data(contentsOf: dir.appendingPathComponent("digests.json")))
        #expect(index.bundles == entries)
        for (e, lines) in zip(entries, bundles) {
            #expect(try Data(contentsOf: dir.appendingPathComponent(e.file)) == Data(lines.flatMap { $0 + [UInt8(0x0A)] }), "\(e.file)")
        }
        let text = bundles.flatMap { $0 }.map { String(decoding: $0, as: UTF8.self) }
        for needle in ["\"event_kind\":\"disappeared\"", "\"event_kind\":\"representation_changed\"", "\"kind\":\"range_close\""] {
            #expect(text.contains { $0.contains(needle) }, "the chain has no \(needle)")
        }
        // A replica of the chain gives the same digests.
        let replicaDir = TempDir()
        let replica = try Archive.open(path: replicaDir.file("replica.sqlite"))
        for (i, (e, lines)) in zip(entries, bundles).enumerated() {
            guard case .applied(let obs, _) = try BundleApplier.apply(replica, lines: lines, manifestHash: e.manifestHash, now: 1) else {
                Issue.record("bundle \(i + 1) not applied"); continue
            }
            let d = try replica.writer.read { db in try ChainStateDigest.compute(db, observationID: obs) }
            #expect(d.digest == e.digest && d.visibleCount == e.visibleCount, "\(e.file)")
        }
        // The replica (a node that restored the chain) builds each bundle again in its format, byte for byte.
        var previous: String?
        for (i, e) in entries.enumerated() {
            let (_, again) = try bundleLines(replica, Int64(i + 1), previous: previous)
            #expect(again == e.manifestHash, "\(e.file) built again from the replica")
            previous = again
        }
        #expect(text.contains { $0.contains("\"kind\":\"new_sample\"") } == (format == 2))
    }

    @Test("the reference replay (Protocol/reference, written from the document) gives the committed digests",
          .enabled(if: toolOnPath("python3"), "needs python3 on PATH"), arguments: [1, 2])
    func pythonReplay(format: Int) throws {
        let dir = Self.dir(format: format)
        let dec = JSONDecoder()
        dec.keyDecodingStrategy = .convertFromSnakeCase
        let index = try dec.decode(Index.self, from: Data(contentsOf: dir.appendingPathComponent("digests.json")))
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = ["python3", vectorURL("../reference/hp_canonical.py").standardizedFileURL.path, "chain-digests"]
            + index.bundles.map { dir.appendingPathComponent($0.file).path }
        let out = Pipe()
        p.standardOutput = out
        try p.run()
        let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        p.waitUntilExit()
        #expect(p.terminationStatus == 0)
        let expected = index.bundles.enumerated().map { "\($0.offset + 1) \($0.element.digest) \($0.element.visibleCount)" }
        #expect(text.split(separator: "\n").map(String.init) == expected)
    }
}
