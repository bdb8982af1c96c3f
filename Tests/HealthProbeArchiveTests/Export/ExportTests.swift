import Foundation
import GRDB
import HealthProbeCanonical
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
        #expect(r3.problems.contains { $0.contains("line 6: expected 27 fields") }, "\(r3.problems)")
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

    @Test("format 2 records carry the catalogue's display name and unit and the local day (JSON and CSV); lateness is null outside captures; a changed human field is named")
    func humanFields() throws {
        let t = try archive()
        let node = try t.open()
        let dir = TempDir()
        let json = try export(node, .observationRecordsJSON, to: dir.file("h.json"))
        let lines = try String(contentsOfFile: json.path, encoding: .utf8).components(separatedBy: "\n")
        let header = try JSONSerialization.jsonObject(with: Data((lines[0] + "]}").utf8)) as! [String: Any]
        #expect(header["export_format_version"] as? Int == 2)
        let zone = (header["archive"] as! [String: Any])["time_zone"] as! [String: Any]
        let days = LocalDays(identifier: zone["identifier"] as? String, secondsFromGMT: zone["seconds_from_gmt"] as? Int)
        #expect(zone["identifier"] as? String != nil, "the simulated device's zone is known")
        #expect((header["archive"] as! [String: Any])["capture"] is NSNull, "a simulator run is not a capture with a window")
        var records = 0
        for line in lines.dropFirst().dropLast(2) {
            let it = try JSONSerialization.jsonObject(with: Data(Substring(line).trimmingSuffix(",").utf8)) as! [String: Any]
            guard it["kind"] as? String == "record" else { continue }
            records += 1
            let info = TypeCatalogue.info(it["sample_type_identifier"] as! String)
            #expect(it["display_name"] as? String == info.name)
            #expect(it["display_unit"] as? String == info.unit)
            #expect(info.unit != nil || it["display_unit"] is NSNull)
            let start = try #require(CanonicalDate.parse(it["start_date"] as? String ?? ""))
            #expect(it["local_day"] as? String == days.date(start))
            #expect(it["lateness_seconds"] is NSNull)
        }
        #expect(records == json.recordCount)

        // An identifier the catalogue does not know stands for itself, with no unit.
        let unknown = HumanFields(typeIdentifier: "HKQuantityTypeIdentifierSyntheticFuture")
        #expect(unknown.nameJSON == Array("\"HKQuantityTypeIdentifierSyntheticFuture\"".utf8) && unknown.unitJSON == Array("null".utf8))
        #expect(unknown.unitCell.isEmpty)
        var cursor = LocalDayCursor(days: nil)
        #expect(cursor.day(1_750_000_000) == nil, "no zone known: no local day")

        // CSV: the spec's 23 columns untouched, the human ones after them.
        let csv = try export(node, .observationRecordsCSV, to: dir.file("h.csv"))
        var rows = try String(contentsOfFile: csv.path, encoding: .utf8).components(separatedBy: "\r\n")
        #expect(CSV.parse(rows[0]) == CSVColumns.recordsV2 && Array(CSVColumns.recordsV2.prefix(23)) == CSVColumns.records)
        let row = try #require(CSV.parse(rows[1]))
        #expect(row.count == 27)
        let info = TypeCatalogue.info(row[2])
        #expect(row[23] == info.name && row[24] == (info.unit ?? "") && row[25].count == 10 && row[26].isEmpty)
        let report = try ExportVerifier.verify(path: csv.path)
        #expect(report.ok && report.formatVersion == 2, "\(report.problems)")
        // The human fields are covered by the item hash.
        var cells = row
        cells[23] = "Renamed"
        rows[1] = cells.joined(separator: ",")
        try rows.joined(separator: "\r\n").write(toFile: csv.path, atomically: true, encoding: .utf8)
        #expect(try ExportVerifier.verify(path: csv.path).problems.contains { $0.contains("line 2: item_hash does not match") })
        var jsonLines = lines
        jsonLines[1] = jsonLines[1].replacingOccurrences(of: "\"local_day\":\"", with: "\"local_day\":\"1")
        try jsonLines.joined(separator: "\n").write(toFile: dir.file("day.json"), atomically: true, encoding: .utf8)
        #expect(try ExportVerifier.verify(path: dir.file("day.json")).problems.contains { $0.hasPrefix("line 2: item 1") })
    }

    @Test("format 2 diff entries and summary items carry the type's display name and unit, summaries their statistic; format 1 has none")
    func humanSummariesAndDiffs() throws {
        let t = try archive()
        let node = try t.open()
        let dir = TempDir()
        for kind in [ExportKind.observationDiffJSON, .typeSummaryJSON] {
            for version in [1, 2] {
                let r = try export(node, kind, to: dir.file("\(kind.rawValue)-\(version).json")) { $0.formatVersion = version }
                let lines = try String(contentsOfFile: r.path, encoding: .utf8).components(separatedBy: "\n")
                var items = 0
                for line in lines.dropFirst().dropLast(2) {
                    let it = try JSONSerialization.jsonObject(with: Data(Substring(line).trimmingSuffix(",").utf8)) as! [String: Any]
                    items += 1
                    let info = TypeCatalogue.info(it["sample_type_identifier"] as! String)
                    if version == 1 {
                        #expect(it["display_name"] == nil && it["display_unit"] == nil && it["statistic"] == nil, "\(kind) v1: \(it.keys.sorted())")
                        continue
                    }
                    #expect(it["display_name"] as? String == info.name, "\(kind)")
                    #expect(info.unit.map { it["display_unit"] as? String == $0 } ?? (it["display_unit"] is NSNull), "\(kind)")
                    #expect(it["statistic"] as? String == (it["kind"] as? String == "type_summary" ? info.statistic.rawValue : nil), "\(kind): \(it["kind"] ?? "")")
                }
                #expect(items > 0, "\(kind) v\(version) has items")
                let report = try ExportVerifier.verify(path: r.path)
                #expect(report.ok && report.formatVersion == version, "\(kind) v\(version): \(report.problems)")
            }
        }
    }

    @Test("version 1 exports (made before format 2) still verify; an unknown version is refused by name")
    func versionOneStillVerifies() throws {
        let dir = repositoryRoot.appendingPathComponent("Tests/fixtures/exports-v1")
        let expected = try JSONDecoder().decode([String: String].self, from: Data(contentsOf: dir.appendingPathComponent("expected.json")))
        #expect(expected.count == ExportKind.allCases.count)
        for (name, hash) in expected {
            let report = try ExportVerifier.verify(path: dir.appendingPathComponent(name).path)
            #expect(report.ok && report.formatVersion == 1 && report.manifestHash == hash, "\(name): \(report.problems)")
        }
        // Format 1 is still made byte for byte (how integrity checks reproduce older exports).
        let work = TempDir()
        let t = try archive()
        let node = try t.open()
        for kind in ExportKind.allCases {
            let name = kind == .observationRecordsCSV ? "\(kind.rawValue).csv" : "\(kind.rawValue).json"
            var request = ExportRequest(kind: kind)
            if kind == .observationDiffJSON { request.from = 1; request.to = 2 }
            request.formatVersion = 1
            let r = try Exporter.writeUnrecorded(archive: node.archive, chainHash: node.deviceChainHash, request: request, out: work.file(name),
                                                 exportID: "00000000-0000-4000-8000-000000000001-\(kind.rawValue)", createdAt: 1_750_000_000, schemaVersion: 16)
            #expect(r.manifestHash == expected[name], "\(name)")
            for p in [r.path] + r.companionPaths {
                let file = (p as NSString).lastPathComponent
                #expect(try Data(contentsOf: dir.appendingPathComponent(file)) == Data(contentsOf: URL(fileURLWithPath: p)), "\(file) in format 1")
                try FileManager.default.removeItem(atPath: p)
            }
        }
        // A v1 CSV row with a changed cell is still named.
        for f in ["observation_records_csv.csv", "observation_records_csv.csv.manifest.json", "observation_records_csv.csv.relationships.csv"] {
            try FileManager.default.copyItem(atPath: dir.appendingPathComponent(f).path, toPath: work.file(f))
        }
        var rows = try String(contentsOfFile: work.file("observation_records_csv.csv"), encoding: .utf8).components(separatedBy: "\r\n")
        rows[1] = rows[1].replacingOccurrences(of: ",quantity,", with: ",category,")
        try rows.joined(separator: "\r\n").write(toFile: work.file("observation_records_csv.csv"), atomically: true, encoding: .utf8)
        #expect(try ExportVerifier.verify(path: work.file("observation_records_csv.csv")).problems.contains { $0.contains("line 2: item_hash does not match") })
        // A version this build does not know.
        let v1 = try String(contentsOf: dir.appendingPathComponent("type_summary_json.json"), encoding: .utf8)
        try v1.replacingOccurrences(of: "\"export_format_version\":1,", with: "\"export_format_version\":9,").write(toFile: work.file("v9.json"), atomically: true, encoding: .utf8)
        #expect(try ExportVerifier.verify(path: work.file("v9.json")).problems == ["line 1: export_format_version must be one of 1, 2 (a newer HealthProbe may read this file)"])
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
