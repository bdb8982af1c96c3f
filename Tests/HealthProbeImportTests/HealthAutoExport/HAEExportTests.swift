import Foundation
@testable import HealthProbeArchive
import HealthProbeCanonical
import HealthProbeTestSupport
import Testing
@testable import HealthProbeImport

/// Exports of a Health Auto Export chain carry the push's windows per type (envelope and
/// archive manifest) and each record's lateness. Real archives, real export files.
@Suite("Health Auto Export exports")
struct HAEExportTests {
    static func items(_ path: String) throws -> (header: [String: Any], items: [[String: Any]]) {
        let lines = try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n")
        let header = try JSONSerialization.jsonObject(with: Data((lines[0] + "]}").utf8)) as! [String: Any]
        let items = try lines.dropFirst().dropLast().map {
            try JSONSerialization.jsonObject(with: Data(($0.hasSuffix(",") ? $0.dropLast() : $0).utf8)) as! [String: Any]
        }
        return (header, items)
    }

    @Test("a yesterday push's export: windows per type in the envelope and the archive manifest, lateness on every record (JSON and CSV)")
    func windowsAndLateness() throws {
        let t = TempHome()
        let node = try t.open()
        let now = t.clock.now()
        let midnight = (now / 86_400).rounded(.down) * 86_400
        let steps = (0..<3).map { HAECaptureTests.text(midnight - 86_400 + Double($0) * 3600) }
        let body = HAESynthetic.body(metrics: [
            HAESynthetic.metric("step_count", "count", steps.map { "{\"qty\":100,\"date\":\"\($0)\",\"source\":\"Synthetic Watch\"}" }),
            HAESynthetic.metric("resting_heart_rate", "count/min", ["{\"qty\":52,\"date\":\"\(HAECaptureTests.text(midnight - 86_400 + 5 * 3600))\"}"]),
        ])
        let window = HAEWindow(period: .yesterday, aggregation: HAEAggregation.none, now: now, utcOffsetSeconds: 0)
        let r = try HAECapture(node: node).record(try HAEDecoder(aggregation: "none").decode(body), window: window)
        #expect(r.appeared == 4)

        let dir = TempDir()
        let json = try Exporter.run(node: node, request: ExportRequest(kind: .observationRecordsJSON), out: dir.file("r.json"))
        let report = try ExportVerifier.verify(path: json.path)
        #expect(report.ok && report.formatVersion == 2, "\(report.problems)")
        let (header, items) = try Self.items(json.path)
        let archive = try #require(header["archive"] as? [String: Any])
        let capture = try #require(archive["capture"] as? [String: Any], "the envelope names the push's windows")
        #expect(capture["source"] as? String == "health_auto_export" && capture["observation_id"] as? Int == Int(r.observationId))
        let windows = try #require(capture["windows"] as? [[String: Any]])
        #expect(windows.map { $0["sample_type_identifier"] as? String } == ["HKQuantityTypeIdentifierRestingHeartRate", "HKQuantityTypeIdentifierStepCount"])
        for w in windows {
            #expect(w["period"] as? String == "yesterday" && w["period_declared"] as? Bool == true)
            #expect(w["aggregation"] as? String == "none" && w["aggregation_declared"] as? Bool == true)
            #expect(w["closed"] as? Bool == true)
            #expect(w["from"] as? String == CanonicalDate.string(midnight - 86_400) && w["to"] as? String == CanonicalDate.string(midnight))
        }
        #expect(windows[1]["display_name"] as? String == "Steps")

        // Each record: first seen minus its end; each type's window holds the largest.
        let records = items.filter { $0["kind"] as? String == "record" }
        #expect(records.count == 4)
        var largest: [String: Double] = [:]
        for item in records {
            let end = try #require(CanonicalDate.parse(item["end_date"] as? String ?? ""))
            let late = try #require(item["lateness_seconds"] as? Double, "lateness is known for a push's records")
            #expect(abs(late - (now - end)) < 1, "\(late)")
            let type = item["sample_type_identifier"] as! String
            largest[type] = max(largest[type] ?? 0, late)
        }
        for w in windows {
            let type = w["sample_type_identifier"] as! String
            #expect(abs((w["max_lateness_seconds"] as? Double ?? -1) - (largest[type] ?? -2)) < 0.001, "\(type)")
        }
        let heart = try #require(records.first { $0["sample_type_identifier"] as? String == "HKQuantityTypeIdentifierRestingHeartRate" })
        #expect(heart["display_name"] as? String == "Resting heart rate" && heart["display_unit"] as? String == "beats/min")

        // The CSV: the same lateness in its own column, after the spec's 23.
        let csv = try Exporter.run(node: node, request: ExportRequest(kind: .observationRecordsCSV), out: dir.file("r.csv"))
        #expect(try ExportVerifier.verify(path: csv.path).ok)
        let rows = try String(contentsOfFile: csv.path, encoding: .utf8).components(separatedBy: "\r\n").filter { !$0.isEmpty }.map { CSV.parse($0)! }
        #expect(rows[0] == CSVColumns.recordsV2)
        let lateColumn = CSVColumns.recordsV2.firstIndex(of: "lateness_seconds")!
        let identity = CSVColumns.recordsV2.firstIndex(of: "sample_identity_hash")!
        for row in rows.dropFirst() {
            let item = try #require(records.first { $0["sample_identity_hash"] as? String == row[identity] })
            #expect(abs(Double(row[lateColumn])! - (item["lateness_seconds"] as! Double)) < 0.001)
        }
        let manifest = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: csv.path + ".manifest.json"))) as! [String: Any]
        #expect(((manifest["archive"] as? [String: Any])?["capture"] as? [String: Any])?["windows"] != nil, "the CSV's manifest names the windows too")

        // The archive manifest: each observation item with its windows.
        let m = try Exporter.run(node: node, request: ExportRequest(kind: .archiveManifestJSON), out: dir.file("m.json"))
        #expect(try ExportVerifier.verify(path: m.path).ok)
        let observation = try #require(try Self.items(m.path).items.first { $0["kind"] as? String == "observation" })
        #expect(((observation["capture"] as? [String: Any])?["windows"] as? [Any])?.count == 2)
    }
}
