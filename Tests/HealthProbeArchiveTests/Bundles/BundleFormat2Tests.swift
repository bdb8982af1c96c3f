import Foundation
import GRDB
import Testing
@testable import HealthProbeArchive
import HealthProbeCanonical
import HealthProbeTestSupport

/// Bundle format 2 (Protocol/bundles.md section 4.6): a sample first seen, with its version,
/// its appeared event and its opened range, as one `new_sample` item.
@Suite("Bundle format 2")
struct BundleFormat2Tests {
    /// Items of each kind in `lines`.
    static func kinds(_ lines: [[UInt8]]) -> [String: Int] {
        var counts: [String: Int] = [:]
        for l in lines.dropFirst().dropLast() {
            if case .object(let o) = try? JSONParser.parse(l), case .string(let k)? = o["kind"] { counts[k, default: 0] += 1 }
        }
        return counts
    }

    @Test("a simulated history in format 2: fewer bytes, the same replica (chain-state digests, as the reference replay gives them too), and the replica builds every bundle again byte for byte",
          arguments: [BundleApplier.IndexMode.maintained, .deferred])
    func history(indexes: BundleApplier.IndexMode) throws {
        let t = try ReplicaTests().history()
        let node = try t.open()
        let replica = try Archive.open(path: TempDir().file("replica.sqlite"))
        let files = TempDir()
        var previous: String?
        var hashes: [String] = [], paths: [String] = [], digests: [String] = []
        for obs in Int64(1)...5 {
            let (one, _) = try bundleLines(node, obs, previous: previous, format: 1)
            let (two, hash) = try bundleLines(node, obs, previous: previous, format: 2)
            #expect(try verify(two, expected: hash, previous: .some(previous)).bundleFormat == 2)
            let (k1, k2) = (Self.kinds(one), Self.kinds(two))
            // Each new_sample stands for one sample, version, appeared event and range of format 1.
            let n = k2["new_sample"] ?? 0
            #expect(n > 0, "observation \(obs) has new samples")
            for kind in ["sample", "version", "event", "range_open"] {
                #expect((k2[kind] ?? 0) + n == k1[kind] ?? 0, "observation \(obs): \(kind)")
            }
            #expect(two.reduce(0) { $0 + $1.count } < one.reduce(0) { $0 + $1.count } * 7 / 10, "observation \(obs): format 2 is at least 30% smaller")
            let outcome = try BundleApplier.apply(replica, lines: two, manifestHash: hash, now: 1, indexes: indexes)
            #expect(outcome == .applied(observationID: obs, sequence: Int(obs)))
            let a = try node.archive.writer.read { db in try ChainStateDigest.compute(db, observationID: obs) }
            let b = try replica.writer.read { db in try ChainStateDigest.compute(db, observationID: obs) }
            #expect(a == b, "observation \(obs)")
            let path = files.file("\(obs).jsonl")
            try Data((two.map { String(decoding: $0, as: UTF8.self) }.joined(separator: "\n") + "\n").utf8).write(to: URL(fileURLWithPath: path))
            paths.append(path)
            hashes.append(hash)
            digests.append("\(obs) \(a.digest) \(a.visibleCount)")
            previous = hash
        }
        #expect(try replica.writer.read { db in try String.fetchAll(db, sql: "PRAGMA integrity_check") } == ["ok"])
        // The replica (a node that restored the chain) knows the chain's format and builds each bundle again as it was sent.
        #expect(try replica.writer.read { db in try ArchiveMetadataRecord.bundleFormat2From(db) } == 1)
        previous = nil
        for obs in Int64(1)...5 {
            let (_, again) = try bundleLines(replica, obs, previous: previous)
            #expect(again == hashes[Int(obs) - 1], "bundle \(obs) built again from the replica")
            previous = again
        }
        if toolOnPath("python3") {
            let p = Process()
            p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            p.arguments = ["python3", vectorURL("../reference/hp_canonical.py").standardizedFileURL.path, "chain-digests"] + paths
            let out = Pipe()
            p.standardOutput = out
            try p.run()
            let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            p.waitUntilExit()
            #expect(text.split(separator: "\n").map(String.init) == digests)
        }
    }

    @Test("a chain does not go back to format 1: the bundle after a format-2 one in format 1 is refused at its header and nothing of it is stored; a chain may begin in format 1 and go on in format 2")
    func neverBack() throws {
        let t = try ReplicaTests().history()
        let node = try t.open()
        let replica = try Archive.open(path: TempDir().file("replica.sqlite"))
        let (b1, h1) = try bundleLines(node, 1, previous: nil, format: 1)
        let (b2, h2) = try bundleLines(node, 2, previous: h1, format: 2)
        let (b3, h3) = try bundleLines(node, 3, previous: h2, format: 1)
        _ = try BundleApplier.apply(replica, lines: b1, manifestHash: h1, now: 1)
        #expect(try replica.writer.read { db in try ArchiveMetadataRecord.bundleFormat2From(db) } == nil)
        _ = try BundleApplier.apply(replica, lines: b2, manifestHash: h2, now: 1)
        #expect(try replica.writer.read { db in try ArchiveMetadataRecord.bundleFormat(db, sequence: 1) } == 1)
        #expect(try replica.writer.read { db in try ArchiveMetadataRecord.bundleFormat(db, sequence: 2) } == 2)
        let before = try replica.writer.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM observations") }
        #expect(throws: BundleError(.malformed, line: 1, "")) { try BundleApplier.apply(replica, lines: b3, manifestHash: h3, now: 1) }
        #expect(try replica.writer.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM observations") } == before)
        // Built again from the replica, each bundle is the format it arrived in.
        #expect(try bundleLines(replica, 1, previous: nil).1 == h1)
        #expect(try bundleLines(replica, 2, previous: h1).1 == h2)
    }

    @Test("a new_sample in a bundle of format 1 is an unknown kind, at its line")
    func unknownInFormat1() throws {
        let t = try ReplicaTests().history()
        let (two, _) = try bundleLines(try t.open(), 1, previous: nil, format: 2)
        guard case .object(var header) = try JSONParser.parse(two[0]) else { Issue.record("no header"); return }
        header["bundle_format"] = .int(1)
        let (lines, hash) = try rebundle(header: try CanonicalJSON.encode(.object(header)), items: Array(two.dropFirst().dropLast()))
        let first = lines.firstIndex { String(decoding: $0, as: UTF8.self).contains("\"kind\":\"new_sample\"") }! + 1
        #expect(throws: BundleError(.unknownKind, line: first, "")) { try verify(lines, expected: hash) }
        header["bundle_format"] = .int(3)
        let (three, _) = try rebundle(header: try CanonicalJSON.encode(.object(header)), items: Array(two.dropFirst().dropLast()))
        #expect(throws: BundleError(.malformed, line: 1, "")) { try verify(three, expected: nil) }
    }
}

extension BundleFormat2Tests {
    @Test("a history of edits, deletions and new samples in the same observations, applied in format 2 to a replica (a restored node): the replica builds every bundle again byte for byte, the closes of ranges opened beside new samples included")
    func rebuiltFromReplica() throws {
        let t = TempHome()
        try t.simulate(seed: 5, days: [8, 3, 3, 3, 3, 3, 3])
        let node = try t.open()
        let bundles = try Self.replayedOnReplica(node, observations: 7)
        #expect(bundles.reduce(0) { $0 + (Self.kinds($1)["range_close"] ?? 0) } > 0)
    }

    /// Applies the node's first `observations` bundles, built in format 2, to a new replica (a
    /// node that restored the chain), expects the replica to build each again to the same
    /// manifest hash, and returns the bundles' lines.
    static func replayedOnReplica(_ node: NodeArchive, observations: Int64) throws -> [[[UInt8]]] {
        let replica = try Archive.open(path: TempDir().file("replica.sqlite"))
        var previous: String?
        var hashes: [String] = [], bundles: [[[UInt8]]] = []
        for obs in Int64(1)...observations {
            let (two, hash) = try bundleLines(node, obs, previous: previous, format: 2)
            _ = try BundleApplier.apply(replica, lines: two, manifestHash: hash, now: 1)
            bundles.append(two)
            hashes.append(hash)
            previous = hash
        }
        previous = nil
        for obs in Int64(1)...observations {
            let (_, again) = try bundleLines(replica, obs, previous: previous)
            #expect(again == hashes[Int(obs) - 1], "bundle \(obs) built again from the replica")
            previous = again
        }
        return bundles
    }
}

extension BundleFormat2Tests {
    @Test("an edit captured before a new sample in one observation, both ranges closed by a later one: the replica, whose rows of that observation came new samples first, builds the closing bundle again byte for byte")
    func closesInContentOrder() throws {
        let t = TempHome()
        let node = try t.open()
        try capture(node, samples: [hr(0), hr(1), hr(2)])
        try capture(node, samples: [hr(0, value: 61), hr(1), hr(2), hr(3)])
        try capture(node, samples: [hr(1), hr(2)])
        let bundles = try Self.replayedOnReplica(node, observations: 3)
        #expect(Self.kinds(bundles[2])["range_close"] == 2)
    }
}

extension BundleFormat2Tests {
    @Test("a stored payload hash that is not its payload's stops a format-2 build, naming the version (format 1 carries it, and a verifier refuses it as payload_hash)")
    func damagedPayloadHash() throws {
        let t = TempHome()
        let node = try t.open()
        try capture(node, samples: [hr(0), hr(1)])
        try node.archive.writer.write { db in
            try db.execute(sql: "UPDATE sample_versions SET payload_hash = ? WHERE id = (SELECT max(id) FROM sample_versions)", arguments: [Data(repeating: 7, count: 32)])
        }
        #expect { _ = try bundleLines(node, 1, previous: nil, format: 2) } throws: { "\($0)".contains("sample_versions.payload_hash of version 2") }
        let (one, hash) = try bundleLines(node, 1, previous: nil, format: 1)
        #expect(throws: BundleError(.payloadHash, line: one.firstIndex { String(decoding: $0, as: UTF8.self).contains("\"kind\":\"version\"") }! + 2, "")) {
            try verify(one, expected: hash)
        }
    }
}
