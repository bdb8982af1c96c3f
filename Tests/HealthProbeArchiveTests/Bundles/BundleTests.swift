import Foundation
import GRDB
import Testing
@testable import HealthProbeArchive
import HealthProbeCanonical
@testable import HealthProbeSimulator
import HealthProbeTestSupport

func verify(_ lines: [[UInt8]], expected: String?, previous: String?? = .none) throws(BundleError) -> BundleHeader {
    var v = BundleVerifier()
    for l in lines { try v.feed(l) }
    return try v.finish(expected: expected, previousManifestHash: previous)
}

@Suite("Observation bundles")
struct BundleTests {
    @Test("every observation of a simulated history builds a bundle that verifies and chains to the previous one")
    func simulatedHistory() throws {
        let t = TempHome()
        try t.simulate(seed: 5, days: [8, 3, 3, 3, 3])
        let node = try t.open()
        var previous: String?
        var kindsSeen = Set<String>()
        for obs in Int64(1)...5 {
            let (lines, hash) = try bundleLines(node, obs, previous: previous)
            let header = try verify(lines, expected: hash, previous: .some(previous))
            #expect(header.sequence == Int(obs))
            for l in lines.dropFirst().dropLast() {
                if case .object(let o) = try JSONParser.parse(l), case .string(let k)? = o["kind"] { kindsSeen.insert(k) }
            }
            previous = hash
        }
        for k in ["observation", "sample_type", "source", "source_revision", "device", "metadata", "sample", "version", "event", "range_open", "range_close", "type_run"] {
            #expect(kindsSeen.contains(k), "no \(k) item in the history")
        }
    }

    @Test("a bundle built again after later captures hashes as it did: a type's name and category are fixed when first stored")
    func rebuiltBundleIsStable() throws {
        let t = TempHome()
        let node = try t.open()
        // An import registers a type without a name; a later capture knows its name and category.
        let bare = SampleTypeDescriptor(heartRate.identifier)
        try capture(node, bare, samples: (0..<5).map { hr($0) })
        let (_, first) = try bundleLines(node, 1, previous: nil)
        try capture(node, heartRate, samples: (0..<7).map { hr($0) })
        try capture(node, SampleTypeDescriptor(heartRate.identifier, displayName: "Pulse", category: .category), samples: (0..<7).map { hr($0) })
        let (_, again) = try bundleLines(node, 1, previous: nil)
        #expect(again == first, "bundle 1 changed after later captures: a lost acknowledgement would look like a divergence")
        let stored = try node.archive.writer.read { db in
            try Row.fetchOne(db, sql: "SELECT display_name, category FROM sample_types WHERE type_identifier = ?", arguments: [heartRate.identifier])
        }
        #expect((stored?["display_name"] as String?) == nil)
        #expect((stored?["category"] as String?) == nil)
    }

    @Test("tampering is caught and located")
    func tampering() throws {
        let t = TempHome()
        var o = SimulatorCapture.Options()
        o.days = 2
        o.types = Array(SimulatedType.all.prefix(3))
        _ = try SimulatorCapture.run(home: t.home, options: o)
        let (lines, hash) = try bundleLines(try t.open(), 1, previous: nil)
        #expect(throws: Never.self) { _ = try verify(lines, expected: hash) }

        let versionLine = lines.firstIndex { String(decoding: $0, as: UTF8.self).contains("\"kind\":\"version\"") }!
        var edited = lines
        let text = String(decoding: lines[versionLine], as: UTF8.self)
        let changed = text.replacingOccurrences(of: "\"unit\":\"count/min\"", with: "\"unit\":\"count/s\"")
        #expect(changed != text)
        edited[versionLine] = Array(changed.utf8)
        #expect(throws: BundleError(.payloadHash, line: versionLine + 1, "")) { _ = try verify(edited, expected: hash) }

        var reordered = lines
        reordered.swapAt(1, 2)
        #expect { _ = try verify(reordered, expected: hash) } throws: { ($0 as? BundleError)?.code == .order }

        #expect { _ = try verify(Array(lines.dropLast()), expected: hash) } throws: { ($0 as? BundleError)?.code == .malformed }
        var spaced = lines
        spaced[3] = Array((" " + String(decoding: lines[3], as: UTF8.self)).utf8)
        #expect { _ = try verify(spaced, expected: hash) } throws: { ($0 as? BundleError)?.code == .notCanonical }
        #expect { _ = try verify(lines, expected: String(repeating: "0", count: 64)) } throws: { ($0 as? BundleError)?.code == .manifestHash }
        #expect { _ = try verify(lines, expected: hash, previous: .some("ab")) } throws: { ($0 as? BundleError)?.code == .chainLink }
        var dropped = lines
        dropped.remove(at: versionLine)
        #expect { _ = try verify(dropped, expected: hash) } throws: { ($0 as? BundleError)?.code == .counts }
    }

    @Test("the Python reference verifier (written from Protocol/bundles.md) agrees with the vectors",
          .enabled(if: toolOnPath("python3"), "needs python3 on PATH"))
    func pythonReference() throws {
        let script = vectorURL("../reference/hp_canonical.py").standardizedFileURL.path
        let dir = vectorURL("bundles")
        let dec = JSONDecoder()
        dec.keyDecodingStrategy = .convertFromSnakeCase
        let index = try dec.decode(VectorIndex.self, from: Data(contentsOf: dir.appendingPathComponent("bundles.json")))
        for c in index.cases {
            let p = Process()
            p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            p.arguments = ["python3", script, "verify-bundle", dir.appendingPathComponent(c.file).path, c.manifestHash ?? ""]
            let out = Pipe()
            p.standardOutput = out
            try p.run()
            let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            p.waitUntilExit()
            if let e = c.error, c.stage != "apply" {
                #expect(p.terminationStatus != 0, "\(c.file)")
                #expect(text.hasPrefix(e + " line " + (c.line.map(String.init) ?? "")), "\(c.file): \(text)")
            } else {
                #expect(p.terminationStatus == 0, "\(c.file): \(text)")
            }
        }
    }

    /// The committed vectors: `bundles.json` lists files with their manifest hash or expected error.
    struct VectorIndex: Codable {
        struct Case: Codable {
            var file: String; var manifestHash: String?; var error: String?; var line: Int?; var stage: String? = nil
            /// Bundles applied first, in order (paths relative to the vectors' folder).
            var after: [String]? = nil
        }
        var cases: [Case]
    }

    @Test("committed bundle vectors verify (or fail) as listed, and the builder reproduces the valid one byte for byte")
    func vectors() throws {
        let dir = vectorURL("bundles")
        // Rebuild the valid vector from a fixed-key home and a fixed seed.
        let t = try fixedKeyHome()
        var o = SimulatorCapture.Options()
        o.seed = 11
        o.days = 1
        o.types = [SimulatedType.all[7], SimulatedType.all[10], SimulatedType.all[15]]  // resting HR, body mass, workouts
        _ = try SimulatorCapture.run(home: t.home, options: o)
        let (lines, hash) = try bundleLines(try t.open(), 1, previous: nil)
        let valid = lines.map { String(decoding: $0, as: UTF8.self) }.joined(separator: "\n") + "\n"
        // The same capture in format 2 (section 4.6).
        let (lines2, hash2) = try bundleLines(try t.open(), 1, previous: nil, format: 2)
        let valid2 = lines2.map { String(decoding: $0, as: UTF8.self) }.joined(separator: "\n") + "\n"

        if ProcessInfo.processInfo.environment["HP_WRITE_VECTORS"] == "1" {
            try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
            try valid.write(to: dir.appendingPathComponent("observation-1.jsonl"), atomically: true, encoding: .utf8)
            var l = lines.map { String(decoding: $0, as: UTF8.self) }
            let v = l.firstIndex { $0.contains("\"kind\":\"version\"") }!
            l[v] = l[v].replacingOccurrences(of: "\"numeric_value\":", with: "\"numeric_value\":1")
            try (l.joined(separator: "\n") + "\n").write(to: dir.appendingPathComponent("bad-payload.jsonl"), atomically: true, encoding: .utf8)
            try (lines.dropLast().map { String(decoding: $0, as: UTF8.self) }.joined(separator: "\n") + "\n")
                .write(to: dir.appendingPathComponent("truncated.jsonl"), atomically: true, encoding: .utf8)
            var cases: [VectorIndex.Case] = [
                .init(file: "observation-1.jsonl", manifestHash: hash, error: nil, line: nil),
                .init(file: "bad-payload.jsonl", manifestHash: hash, error: "payload_hash", line: v + 1),
                .init(file: "truncated.jsonl", manifestHash: hash, error: "malformed", line: nil),
            ]
            // Content refused with every hash right: each changes one item of the valid bundle,
            // or of a bundle of the committed chain.
            let (chainHome, _, chain) = try DigestVectorTests.chain()
            defer { withExtendedLifetime(chainHome) {} }
            cases.append(.init(file: "observation-1-format-2.jsonl", manifestHash: hash2, error: nil, line: nil))
            try valid2.write(to: dir.appendingPathComponent("observation-1-format-2.jsonl"), atomically: true, encoding: .utf8)
            // The home's next capture, built in format 1 after bundle 1 in format 2.
            var next = o
            next.days = 1
            _ = try SimulatorCapture.run(home: t.home, options: next)
            let after2 = try bundleLines(try t.open(), 2, previous: hash2, format: 1)
            let after2in2 = try bundleLines(try t.open(), 2, previous: hash2, format: 2)
            for m in BundleVectors.meaning(lines) + BundleVectors.chained(chain) + BundleVectors.format2(lines2, next: after2, next2: after2in2) {
                try (m.lines.map { String(decoding: $0, as: UTF8.self) }.joined(separator: "\n") + (m.unterminated ? "" : "\n"))
                    .write(to: dir.appendingPathComponent(m.file), atomically: true, encoding: .utf8)
                cases.append(.init(file: m.file, manifestHash: m.hash, error: m.error, line: m.line, stage: m.stage, after: m.after))
            }
            let index = VectorIndex(cases: cases)
            let enc = JSONEncoder()
            enc.outputFormatting = [.prettyPrinted, .sortedKeys]
            enc.keyEncodingStrategy = .convertToSnakeCase
            try enc.encode(index).write(to: dir.appendingPathComponent("bundles.json"))
        }

        let dec = JSONDecoder()
        dec.keyDecodingStrategy = .convertFromSnakeCase
        let index = try dec.decode(VectorIndex.self, from: Data(contentsOf: dir.appendingPathComponent("bundles.json")))
        // Every case of Protocol/bundles.md sections 4.5 and 5 has its vector.
        #expect(index.cases.count >= 38)
        #expect(try String(contentsOf: dir.appendingPathComponent("observation-1.jsonl"), encoding: .utf8) == valid)
        #expect(try String(contentsOf: dir.appendingPathComponent("observation-1-format-2.jsonl"), encoding: .utf8) == valid2)
        #expect(index.cases.contains { $0.file == "observation-1-format-2.jsonl" && $0.manifestHash == hash2 && $0.error == nil })
        #expect(index.cases.first?.manifestHash == hash)
        for c in index.cases {
            // Read as a file is read (a last line without its newline is seen).
            let path = dir.appendingPathComponent(c.file).path
            if c.stage == "apply" || c.after != nil {
                // Passes the verifier; refused by a replica holding the bundles before it
                // (none: an empty replica, the bundle is a chain's first).
                #expect(throws: Never.self, "\(c.file)") { _ = try BundleFile.verify(path, expected: c.manifestHash) }
                let replicaDir = TempDir()
                let replica = try Archive.open(path: replicaDir.file("replica.sqlite"))
                for before in c.after ?? [] {
                    let file = dir.appendingPathComponent(before).path
                    let (_, verifier) = try BundleFile.verify(file, expected: nil)
                    _ = try BundleApplier.apply(replica, lines: try FileLines(path: file), manifestHash: verifier.manifestHash ?? "", now: 1)
                }
                do {
                    _ = try BundleApplier.apply(replica, lines: try FileLines(path: path), manifestHash: c.manifestHash ?? "", now: 1)
                    #expect(c.error == nil, "\(c.file) applied but should be refused with \(c.error ?? "")")
                } catch {
                    #expect(BundleMeaningTests.code(error) == c.error, "\(c.file): \(error)")
                    #expect(BundleMeaningTests.line(error) == c.line, "\(c.file): \(error)")
                }
                continue
            }
            do {
                _ = try BundleFile.verify(path, expected: c.manifestHash)
                #expect(c.error == nil, "\(c.file) verified but should fail with \(c.error ?? "")")
            } catch {
                #expect(BundleMeaningTests.code(error) == c.error, "\(c.file): \(error)")
                if let line = c.line { #expect(BundleMeaningTests.line(error) == line, "\(c.file)") }
            }
        }
    }
}
