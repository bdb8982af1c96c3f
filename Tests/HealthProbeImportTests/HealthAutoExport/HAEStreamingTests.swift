import Foundation
import HealthProbeArchive
import HealthProbeCanonical
import HealthProbeTestSupport
import Testing
@testable import HealthProbeImport

/// The streaming decoder: bodies read in chunks, members in any order, the error a
/// whole-tree read would name, and a large body from its file. Real files, real archives.
@Suite("Health Auto Export streaming decoder")
struct HAEStreamingTests {
    static let day = HAESynthetic.day

    @Test("read in chunks of 1 to 64 bytes (every value straddles chunks), every shape decodes to the samples of one buffer", arguments: [1, 2, 3, 7, 13, 64])
    func chunks(size: Int) throws {
        let bytes = HAESynthetic.everyShape
        let whole = try HAEDecoder(aggregation: "minutes").decode(bytes)
        let chunked = try HAEDecoder(aggregation: "minutes").decode(.memory(bytes, chunkBytes: size))
        #expect(chunked.samples == whole.samples && chunked.unrecognised == whole.unrecognised)
        #expect(whole.samples.count == 13 && whole.unrecognised.count == 7)
    }

    @Test("escapes and non-ASCII text across chunk edges; what the strict parser refuses is refused as not JSON")
    func strictness() throws {
        let body = Array(#"{"data":{"metrics":[{"name":"step_count","units":"count","data":[{"qty":1,"date":"2024-02-06 00:00:00 +0000","source":"Synth\u00e9tic \"W\u00e4tch\" \ud83d\ude00 ä"}]}]}}"#.utf8)
        for size in [1, 5, 1 << 20] {
            let p = try HAEDecoder().decode(.memory(body, chunkBytes: size))
            #expect(p.samples.first?.sample.source?.name == "Synthétic \"Wätch\" 😀 ä")
        }
        let bad: [String] = [
            #"{"data":{"metrics":[{"name":"step_count","name":"x","data":[]}]}}"#, // duplicate key
            #"{"data":{"metrics":[{"name":"step_count","units":"count","data":[{"qty":1,"qty":2,"date":"2024-02-06 00:00:00 +0000"}]}]}}"#,
            #"{"data":{"other":{"a":[1,2,{"b":"\ud800"}]}}}"#, // lone surrogate in a skipped member
            #"{"data":{"other":[01]}}"#,
            #"{"data":{"metrics":[]},}"#,
            #"{"data":{"metrics":[1,]}}"#,
            "{\"data\":{\"other\":\"\u{01}\"}}",
        ]
        for text in bad {
            #expect((try? JSONParser.parse(Array(text.utf8))) == nil, "JSONParser accepts \(text)")
            for size in [1, 3, 1 << 20] {
                do {
                    _ = try HAEDecoder().decode(.memory(Array(text.utf8), chunkBytes: size))
                    Issue.record("accepted \(text)")
                } catch let e as HAEDecodeError {
                    #expect(e.path == "$" && e.reason.hasPrefix("not JSON"), "\(text): \(e.message)")
                }
            }
        }
        var invalidUTF8 = Array(#"{"data":{"x":"ab"}}"#.utf8)
        invalidUTF8[15] = 0xFF
        #expect(throws: HAEDecodeError("$", "not JSON (invalid JSON at byte 14: string is not valid UTF-8)")) { try HAEDecoder().decode(invalidUTF8) }
        let deep = "{\"data\":{\"x\":" + String(repeating: "[", count: 63) + String(repeating: "]", count: 63) + "}}"
        #expect(throws: HAEDecodeError.self) { try HAEDecoder().decode(Array(deep.utf8)) }
        let ok = "{\"data\":{\"x\":" + String(repeating: "[", count: 62) + String(repeating: "]", count: 62) + "}}"
        #expect(try HAEDecoder().decode(Array(ok.utf8)).unrecognisedCounts["x"] == 1)
    }

    @Test("members in any order: data before name and units, workouts before metrics, route before start decode the same samples")
    func memberOrder() throws {
        let point = "{\"qty\":3,\"date\":\"\(Self.day) 01:00:00 +0000\",\"source\":\"Synthetic Watch\"}"
        let workout = "{\"name\":\"Run\",\"start\":\"\(Self.day) 06:00:00 +0000\",\"end\":\"\(Self.day) 06:30:00 +0000\",\"duration\":1800,"
            + "\"heartRateData\":[{\"Min\":90,\"Avg\":120,\"Max\":150,\"date\":\"\(Self.day) 06:00:00 +0000\"}],"
            + "\"route\":[{\"lat\":47,\"lon\":8,\"timestamp\":\"\(Self.day) 06:00:01 +0000\"}]}"
        let reordered = "{\"route\":[{\"timestamp\":\"\(Self.day) 06:00:01 +0000\",\"lon\":8,\"lat\":47}],\"duration\":1800,"
            + "\"heartRateData\":[{\"date\":\"\(Self.day) 06:00:00 +0000\",\"Max\":150,\"Avg\":120,\"Min\":90}],"
            + "\"end\":\"\(Self.day) 06:30:00 +0000\",\"start\":\"\(Self.day) 06:00:00 +0000\",\"name\":\"Run\"}"
        let usual = "{\"data\":{\"metrics\":[{\"name\":\"active_energy\",\"units\":\"kJ\",\"data\":[\(point)]},{\"name\":\"step_count\",\"data\":[\(point)]}],\"workouts\":[\(workout)]}}"
        let other = "{\"data\":{\"workouts\":[\(reordered)],\"metrics\":[{\"data\":[\(point)],\"units\":\"kJ\",\"name\":\"active_energy\"},{\"data\":[\(point)],\"name\":\"step_count\"}]}}"
        for size in [3, 1 << 20] {
            let a = try HAEDecoder().decode(.memory(Array(usual.utf8), chunkBytes: size))
            let b = try HAEDecoder().decode(.memory(Array(other.utf8), chunkBytes: size))
            #expect(Set(a.samples) == Set(b.samples) && a.samples.count == 3)
            #expect(a.samples.first { $0.typeIdentifier == "HKQuantityTypeIdentifierActiveEnergyBurned" }?.sample.unit == "kcal")
        }
    }

    @Test("among several wrong fields the one a whole-tree read names first is named; not JSON anywhere wins", arguments: [
        // a wrong workout before a wrong metric in the body: the metric is named
        ("{\"data\":{\"workouts\":[{\"name\":1}],\"metrics\":[{\"name\":\"step_count\",\"data\":[{\"qty\":\"x\"}]}]}}", "data.metrics[0].data[0].qty"),
        ("{\"data\":{\"ecg\":[1],\"workouts\":[7]}}", "data.workouts[0]"),
        ("{\"data\":{\"ecg\":[1],\"symptoms\":[1]}}", "data.symptoms[0]"),
        // a wrong field, then damage after it: not JSON
        ("{\"data\":{\"metrics\":[{\"name\":\"step_count\",\"data\":[{\"qty\":\"x\"}]}],\"workouts\":[}}", "$"),
        ("{\"data\":{\"metrics\":[{\"name\":\"step_count\",\"data\":[{\"qty\":\"x\"}]}]}} x", "$"),
        ("{\"data\":{\"metrics\":[{\"name\":\"step_count\",\"data\":[{\"qty\":\"x\"}, 1e999]}]}}", "$"),
        // a wrong name is named before its points
        ("{\"data\":{\"metrics\":[{\"data\":[{\"qty\":\"x\"}],\"name\":\"\"}]}}", "data.metrics[0].name"),
        ("{\"data\":{\"metrics\":[{\"name\":\"step_count\"}]}}", "data.metrics[0].data"),
        ("{\"x\":1}", "data"),
        ("{\"data\":1}", "data"),
    ])
    func errorOrder(body: String, path: String) {
        for size in [2, 1 << 20] {
            do {
                _ = try HAEDecoder().decode(.memory(Array(body.utf8), chunkBytes: size))
                Issue.record("accepted \(body)")
            } catch let e as HAEDecodeError {
                #expect(e.path == path, "\(e.message)")
            } catch {
                Issue.record("\(error)")
            }
        }
    }

    /// A 7-day minute-level body of `metrics` metrics (about 1 MB each), written straight to `path`.
    static func writeLargeBody(_ path: String, metrics: Int) throws -> Int {
        _ = FileManager.default.createFile(atPath: path, contents: nil)
        let h = try #require(FileHandle(forWritingAtPath: path))
        defer { try? h.close() }
        let names = ["step_count", "active_energy", "basal_energy_burned", "walking_running_distance", "flights_climbed", "apple_exercise_time"]
        let start = 1_707_177_600.0
        try h.write(contentsOf: Data("{\"data\":{\"metrics\":[".utf8))
        var n = 0
        for m in 0..<metrics {
            var text = (m == 0 ? "" : ",") + "{\"name\":\"\(names[m % names.count])\",\"units\":\"count\",\"data\":["
            for minute in 0..<(7 * 1440) {
                text += (minute == 0 ? "" : ",") + "{\"qty\":\(minute % 90 + 1),\"date\":\"\(HAESynthetic.text(start + Double(minute) * 60 + Double(m)))\",\"source\":\"Synthetic Watch \(m)\"}"
                n += 1
            }
            try h.write(contentsOf: Data((text + "]}").utf8))
        }
        try h.write(contentsOf: Data("],\"ecg\":[{}]}}".utf8))
        return n
    }

    @Test("a generated 9 MB body streams from its file in 1 MiB chunks: every sample counted in both passes")
    func largeBodyFromFile() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("hae-stream-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/body.json"
        let written = try Self.writeLargeBody(path, metrics: 12)
        let body = try HAEBody.file(path)
        #expect(body.count > 9_000_000)
        let scan = try HAEDecoder().scan(body)
        #expect(scan.samples == written && written == 12 * 7 * 1440)
        #expect(scan.types.count == 6 && scan.unrecognisedCounts == ["ecg": 1])
        var streamed = 0, last = ""
        try HAEDecoder().stream(body) { s in
            streamed += 1
            last = s.path
        }
        #expect(streamed == written && last == "data.metrics[11].data[10079]")
    }

    @Test("a body recorded from its file in two passes gives the observation of its payload, however small the pages")
    func recordFromFile() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("hae-record-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/body.json"
        try Data(HAESynthetic.everyShape).write(to: URL(fileURLWithPath: path))
        let decoder = HAEDecoder(aggregation: "none")
        let body = try HAEBody.file(path, chunkBytes: 5)
        let scan = try decoder.scan(body)
        #expect(scan.samples == 17 && scan.unrecognised == 7)

        let t1 = TempHome(), t2 = TempHome()
        let w = HAEWindow(period: .yesterday, aggregation: HAEAggregation.none, now: t1.clock.now(), utcOffsetSeconds: 0)
        let fromPayload = try HAECapture(node: try t1.open()).record(try decoder.decode(HAESynthetic.everyShape), window: w)
        var small = HAECapture(node: try t2.open())
        small.pageSize = 2
        small.maxBuffered = 3
        let fromFile = try small.record(body, decoder: decoder, scan: scan, window: w)
        #expect(fromFile.records == 17 && fromFile.types == fromPayload.types && fromFile.unrecognised == 7)
        #expect(fromFile.appeared == fromPayload.appeared && fromFile.status == fromPayload.status && fromFile.appeared == 17)
    }

    @Test("a body that changed between the check and the recording is reverted, not half recorded")
    func changedBetweenPasses() throws {
        let t = TempHome()
        let node = try t.open()
        let decoder = HAEDecoder(aggregation: "none")
        let scan = try decoder.scan(.memory(HAESynthetic.points("step_count", "count", at: [1_707_177_600, 1_707_181_200])))
        let w = HAEWindow(period: .sinceLastSync, aggregation: HAEAggregation.none, now: t.clock.now(), utcOffsetSeconds: 0)
        #expect(throws: ArchiveError.self) {
            try HAECapture(node: node).record(.memory(HAESynthetic.points("step_count", "count", at: [1_707_177_600])), decoder: decoder, scan: scan, window: w)
        }
        let again = try HAECapture(node: node).record(.memory(HAESynthetic.points("step_count", "count", at: [1_707_177_600])), decoder: decoder,
                                                      scan: try decoder.scan(.memory(HAESynthetic.points("step_count", "count", at: [1_707_177_600]))), window: w)
        #expect(again.appeared == 1)
    }
}
