import Foundation
import GRDB
import Testing
@testable import HealthProbeArchive
@testable import HealthProbeSimulator
@testable import HealthProbeImport
import HealthProbeTestSupport

@Suite("Exports")
struct ExportTests {
    /// A fixed-key home with two simulated observations and an imported export (relationships).
    func archive() throws -> TempHome {
        let t = try fixedKeyHome()
        var o = SimulatorCapture.Options()
        o.seed = 11
        o.days = 2
        o.types = [SimulatedType.all[7], SimulatedType.all[10], SimulatedType.all[15]]
        _ = try SimulatorCapture.run(home: t.home, options: o)
        o.days = 1
        _ = try SimulatorCapture.run(home: t.home, options: o)
        return t
    }

    func export(_ node: NodeArchive, _ kind: ExportKind, to path: String, id: String? = nil,
                configure: (inout ExportRequest) -> Void = { _ in }) throws -> ExportResult {
        var r = ExportRequest(kind: kind)
        if kind == .observationDiffJSON { r.from = 1; r.to = 2 }
        configure(&r)
        return try Exporter.run(node: node, request: r, out: path, overwrite: true, exportID: id.map { "\($0)-\(kind.rawValue)" } ?? UUID().uuidString.lowercased())
    }

    @Test("every kind verifies from its file alone; a second export of the same scope has the same hashes")
    func everyKindReproducible() throws {
        let t = try archive()
        let node = try t.open()
        let dir = TempDir()
        for kind in ExportKind.allCases {
            let a = try export(node, kind, to: dir.file("a-\(kind.rawValue)"), id: "a")
            let b = try export(node, kind, to: dir.file("b-\(kind.rawValue)"), id: "b")
            #expect(a.manifestHash == b.manifestHash, "\(kind)")
            #expect(a.recordCount == b.recordCount && a.recordCount > 0, "\(kind)")
            let report = try ExportVerifier.verify(path: a.path)
            #expect(report.ok, "\(kind): \(report.problems)")
            #expect(report.manifestHash == a.manifestHash)
            if kind != .observationRecordsCSV {
                let itemsA = try String(contentsOfFile: a.path, encoding: .utf8).split(separator: "\n").dropFirst().dropLast()
                let itemsB = try String(contentsOfFile: b.path, encoding: .utf8).split(separator: "\n").dropFirst().dropLast()
                #expect(Array(itemsA) == Array(itemsB), "\(kind): items differ between two exports of one scope")
            }
        }
        // Recorded manifests.
        try node.archive.writer.read { db throws in
            #expect(try Int.fetchOne(db, sql: "SELECT count(*) FROM export_manifests WHERE status = 'completed' AND manifest_hash != ''") == 10)
        }
    }

    @Test("records: visibility fields, filters, relationships of an import")
    func recordFields() throws {
        let t = try archive()
        let node = try t.open()
        let dir = TempDir()
        let all = try export(node, .observationRecordsJSON, to: dir.file("all.json"), configure: { $0.at = 1 })
        let items = try String(contentsOfFile: all.path, encoding: .utf8).split(separator: "\n").dropFirst().dropLast()
            .map { try JSONSerialization.jsonObject(with: Data($0.trimmingSuffix(",").utf8)) as! [String: Any] }
        #expect(items.allSatisfy { $0["observation_id"] as? Int == 1 && $0["first_seen_observation_id"] as? Int == 1 })
        // Visible at 1 and still at 2 (as of 2): last verified 2 unless it disappeared at 2.
        for it in items {
            if let d = it["disappeared"] as? [String: Any] { #expect(d["observation_id"] as? Int == 2) } else { #expect(it["last_verified_observation_id"] as? Int == 2) }
        }
        // As of observation 1, nothing is known to have disappeared.
        let asOf1 = try export(node, .observationRecordsJSON, to: dir.file("asof.json"), configure: { $0.at = 1; $0.asOf = 1 })
        #expect(!(try String(contentsOfFile: asOf1.path, encoding: .utf8)).contains("\"disappeared\":{"))
        let oneType = try export(node, .observationRecordsJSON, to: dir.file("one.json"), configure: { $0.types = ["HKQuantityTypeIdentifierBodyMass"] })
        #expect(oneType.recordCount > 0 && oneType.recordCount < all.recordCount)

        // An import with correlations: relationships exported when both ends are in scope.
        let imp = TempHome()
        let xdir = TempDir()
        var e = SyntheticExport(records: 300)
        e.compositeEvery = 50
        try e.writeXML(to: xdir.file("export.xml"))
        _ = try importExport(imp, xdir.file("export.xml"))
        let inode = try imp.open()
        let rec = try export(inode, .observationRecordsJSON, to: xdir.file("r.json"))
        let text = try String(contentsOfFile: rec.path, encoding: .utf8)
        #expect(text.contains("\"kind\":\"relationship\""))
        #expect(try ExportVerifier.verify(path: rec.path).ok)
        let csv = try export(inode, .observationRecordsCSV, to: xdir.file("r.csv"))
        #expect(csv.companionPaths.contains { $0.hasSuffix(".relationships.csv") })
        #expect(try ExportVerifier.verify(path: csv.path).ok)
    }

    @Test("tampering is named: an item's value, a CSV cell, the manifest hash, a truncated file")
    func tamper() throws {
        let t = try archive()
        let node = try t.open()
        let dir = TempDir()
        let json = try export(node, .observationRecordsJSON, to: dir.file("x.json"))
        var lines = try String(contentsOfFile: json.path, encoding: .utf8).components(separatedBy: "\n")
        lines[3] = lines[3].replacingOccurrences(of: "\"numeric_value\":", with: "\"numeric_value\":9")
        try lines.joined(separator: "\n").write(toFile: dir.file("item.json"), atomically: true, encoding: .utf8)
        let r1 = try ExportVerifier.verify(path: dir.file("item.json"))
        #expect(r1.problems.contains { $0.hasPrefix("line 4: item 3") && $0.contains("item_hash") }, "\(r1.problems)")
        // The manifest covers the stated item hashes: only the altered item is named.
        #expect(r1.problems.count == 1)

        let original = try String(contentsOfFile: json.path, encoding: .utf8)
        try original.replacingOccurrences(of: json.manifestHash, with: String(repeating: "0", count: 64)).write(toFile: dir.file("m.json"), atomically: true, encoding: .utf8)
        #expect(try ExportVerifier.verify(path: dir.file("m.json")).problems.contains { $0.hasPrefix("manifest.manifest_hash") })

        try String(original.prefix(original.count / 2)).write(toFile: dir.file("t.json"), atomically: true, encoding: .utf8)
        #expect(try ExportVerifier.verify(path: dir.file("t.json")).problems.contains { $0.contains("truncated") || $0.contains("not a JSON object") })

        let csv = try export(node, .observationRecordsCSV, to: dir.file("x.csv"))
        var rows = try String(contentsOfFile: csv.path, encoding: .utf8).components(separatedBy: "\r\n")
        rows[2] = rows[2].replacingOccurrences(of: ",quantity,", with: ",category,")
        try rows.joined(separator: "\r\n").write(toFile: csv.path, atomically: true, encoding: .utf8)
        let r2 = try ExportVerifier.verify(path: csv.path)
        #expect(r2.problems.contains { $0.contains("line 3: item_hash does not match") }, "\(r2.problems)")

        // A number column that holds no number, and a stray quote: each named by line.
        var cells = rows[4].components(separatedBy: ",")
        let numeric = CSVColumns.records.firstIndex(of: "numeric_value")!
        #expect(!cells[numeric].isEmpty, "row 5 should have a value")
        cells[numeric] = "abc"
        rows[4] = cells.joined(separator: ",")
        rows[5] = rows[5].replacingOccurrences(of: ",quantity,", with: ",quan\"tity,")
        try rows.joined(separator: "\r\n").write(toFile: csv.path, atomically: true, encoding: .utf8)
        let r3 = try ExportVerifier.verify(path: csv.path)
        #expect(r3.problems.contains { $0.contains("line 5: numeric_value is not a number") }, "\(r3.problems)")
        #expect(r3.problems.contains { $0.contains("line 5: item_hash does not match") }, "\(r3.problems)")
        #expect(r3.problems.contains { $0.contains("line 6: expected 23 fields") }, "\(r3.problems)")
    }

    @Test("cancelled or failed: no file, no completed manifest; bad scopes are refused")
    func cancelAndFail() throws {
        let t = try archive()
        let node = try t.open()
        let dir = TempDir()
        var r = ExportRequest(kind: .observationRecordsJSON)
        r.types = []
        let path = dir.file("c.json")
        // A small page count: cancel as soon as the exporter polls.
        #expect(throws: ArchiveError.self) {
            try Exporter.run(node: node, request: r, out: path, isCancelled: { true })
        }
        // Too few items to poll? Then it completed: make sure cancellation really happens on a big scope.
        let files = try FileManager.default.contentsOfDirectory(atPath: dir.path)
        #expect(!files.contains("c.json") && !files.contains("c.json.partial"), "\(files)")
        try node.archive.writer.read { db throws in
            #expect(try String.fetchOne(db, sql: "SELECT status FROM export_manifests ORDER BY id DESC LIMIT 1") == "cancelled")
            #expect(try Int.fetchOne(db, sql: "SELECT count(*) FROM export_manifests WHERE status = 'completed'") == 0)
        }
        #expect(throws: ArchiveError.self) { try Exporter.run(node: node, request: r, out: "/nonexistent-dir/x.json") }
        _ = try Exporter.run(node: node, request: r, out: path)
        #expect(throws: ArchiveError.self) { try Exporter.run(node: node, request: r, out: path) }  // exists, no overwrite
        var bad = ExportRequest(kind: .observationRecordsJSON)
        bad.at = 99
        #expect(throws: ArchiveError.self) { try Exporter.run(node: node, request: bad, out: dir.file("b.json")) }
        try node.archive.writer.read { db throws in
            #expect(try Int.fetchOne(db, sql: "SELECT count(*) FROM export_manifests WHERE status = 'failed'") == 2)
        }
    }

    @Test("committed export vectors verify, and the exporter reproduces them byte for byte")
    func vectors() throws {
        let dir = vectorURL("exports")
        let t = try archive()
        t.clock.set(1_750_000_000)
        let node = try t.open()
        let work = TempDir()
        let write = ProcessInfo.processInfo.environment["HP_WRITE_VECTORS"] == "1"
        if write { try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true) }
        var index: [String: String] = [:]
        for kind in ExportKind.allCases {
            let name = kind == .observationRecordsCSV ? "\(kind.rawValue).csv" : "\(kind.rawValue).json"
            let r = try export(node, kind, to: work.file(name), id: "00000000-0000-4000-8000-000000000001")
            index[name] = r.manifestHash
            for p in [r.path] + r.companionPaths {
                let file = (p as NSString).lastPathComponent
                let committed = dir.appendingPathComponent(file)
                if write {
                    if FileManager.default.fileExists(atPath: committed.path) { try FileManager.default.removeItem(at: committed) }
                    try FileManager.default.copyItem(atPath: p, toPath: committed.path)
                }
                #expect(try Data(contentsOf: committed) == Data(contentsOf: URL(fileURLWithPath: p)), "\(file) differs from the committed vector")
            }
            let report = try ExportVerifier.verify(path: dir.appendingPathComponent(name).path)
            #expect(report.ok && report.manifestHash == r.manifestHash, "\(name): \(report.problems)")
        }
        let enc = JSONEncoder()
        enc.outputFormatting = [.prettyPrinted, .sortedKeys]
        if write { try enc.encode(index).write(to: dir.appendingPathComponent("expected.json")) }
        let expected = try JSONDecoder().decode([String: String].self, from: Data(contentsOf: dir.appendingPathComponent("expected.json")))
        #expect(expected == index)
    }
}

extension Substring {
    func trimmingSuffix(_ s: String) -> String { hasSuffix(s) ? String(dropLast(s.count)) : String(self) }
}
