import ArgumentParser
import Foundation
import HealthProbeArchive
import HealthProbeCanonical
import HealthProbeImport
import HealthProbeIngest

/// `hp-bench ingest --megabytes 20`: a seven-day, minute-level Health Auto Export body of
/// about that size, recorded through the endpoint's path (kept on disk, checked in a first
/// streaming pass, recorded in a second as one observation), against `hp-node import` of the
/// same samples as an export.xml, in one run. Targets (issue 43): at least half the import's
/// samples/s, peak RSS under 200 MB (the body, held in memory as it arrived, included).
struct IngestBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "ingest", abstract: "Measure Health Auto Export ingest against hp-node import on the same samples.")

    @Option(name: .long, help: "Approximate size of the body, in MB.")
    var megabytes: Int = 20

    @OptionGroup var bench: BenchOptions

    func validate() throws {
        guard (1...512).contains(megabytes) else { throw ValidationError("--megabytes must be 1...512") }
    }

    /// Cumulative metrics a phone reports per minute: (HAE name, HealthKit type, unit).
    static let metrics = [("step_count", "HKQuantityTypeIdentifierStepCount", "count"), ("active_energy", "HKQuantityTypeIdentifierActiveEnergyBurned", "kcal"),
                          ("basal_energy_burned", "HKQuantityTypeIdentifierBasalEnergyBurned", "kcal"),
                          ("walking_running_distance", "HKQuantityTypeIdentifierDistanceWalkingRunning", "km"),
                          ("flights_climbed", "HKQuantityTypeIdentifierFlightsClimbed", "count"), ("apple_exercise_time", "HKQuantityTypeIdentifierAppleExerciseTime", "min")]

    /// Writes the body (JSON) and the same samples as export.xml; returns the sample count.
    func generate(json: String, xml: String, start: Double) throws -> Int {
        let target = megabytes * 1_000_000
        guard let j = FileHandle(forWritingAtPath: { FileManager.default.createFile(atPath: json, contents: nil); return json }()),
              let x = FileHandle(forWritingAtPath: { FileManager.default.createFile(atPath: xml, contents: nil); return xml }()) else {
            throw ValidationError("cannot write in \(json)")
        }
        defer { try? j.close(); try? x.close() }
        try j.write(contentsOf: Data("{\"data\":{\"metrics\":[".utf8))
        try x.write(contentsOf: Data("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<HealthData locale=\"en_US\">\n <ExportDate value=\"\(HAESyntheticText.text(start + 8 * 86_400))\"/>\n".utf8))
        var written = 0, samples = 0, round = 0
        while written < target {
            for (k, (name, type, unit)) in Self.metrics.enumerated() where written < target {
                let source = "Synthetic Watch \(round + 1)"
                var points: [String] = []
                var records = ""
                for minute in 0..<(7 * 1440) {
                    let t = start + Double(minute) * 60
                    let value = Double((minute * 7 + k * 13 + round * 3) % 90 + 1)
                    let date = HAESyntheticText.text(t)
                    points.append("{\"qty\":\(Int(value)),\"date\":\"\(date)\",\"source\":\"\(source)\"}")
                    let end = HAESyntheticText.text(t + 60)
                    records += " <Record type=\"\(type)\" sourceName=\"\(source)\" unit=\"\(unit)\" creationDate=\"\(end)\" startDate=\"\(date)\" endDate=\"\(end)\" value=\"\(Int(value))\"/>\n"
                    samples += 1
                }
                let metric = (written == 0 ? "" : ",") + "{\"name\":\"\(name)\",\"units\":\"\(unit)\",\"data\":[" + points.joined(separator: ",") + "]}"
                try j.write(contentsOf: Data(metric.utf8))
                try x.write(contentsOf: Data(records.utf8))
                written += metric.utf8.count
            }
            round += 1
        }
        try j.write(contentsOf: Data("]}}".utf8))
        try x.write(contentsOf: Data("</HealthData>\n".utf8))
        return samples
    }

    func run() async throws {
        let root = bench.workDirectory("ingest")
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        defer { bench.cleanUp(root) }
        let start = (Date().timeIntervalSince1970 / 86_400).rounded(.down) * 86_400 - 8 * 86_400
        let (generated, genSeconds) = try Measure.time { try generate(json: root + "/body.json", xml: root + "/export.xml", start: start) }
        let body = [UInt8](try Data(contentsOf: URL(fileURLWithPath: root + "/body.json")))
        if !bench.json {
            FileHandle.standardError.write(Data(String(format: "generated %d samples: body %.1f MB in %.1f s\n", generated, Double(body.count) / 1_000_000, genSeconds).utf8))
        }
        var results: [PhaseResult] = []
        // hp-node import of the same samples (export.xml), the reference.
        Measure.resetPeakRSS()
        let importHome = ArchiveHome(root: root + "/import-home")
        var o = AppleHealthImporter.Options()
        o.pageSize = bench.pageSize
        let (imported, importSeconds) = try Measure.time { try AppleHealthImporter(node: try importHome.open(), options: o).importExport(at: root + "/export.xml") }
        let importRate = Double(imported.records) / importSeconds
        results.append(PhaseResult(phase: "hp_node_import", samples: imported.records, seconds: importSeconds, samplesPerSecond: importRate,
                                   archiveBytes: Measure.databaseBytes(importHome.archivePath), peakRssBytes: Measure.peakRSS(), notes: imported.status))
        // The endpoint's path: kept on disk, decoded, recorded as one observation.
        Measure.resetPeakRSS()
        let homes = CaptureHomes(home: ArchiveHome(root: root + "/node"))
        let processor = IngestProcessor(homes: homes, archives: OpenArchives(), logger: Archive.silentLogger, utcOffset: { _ in 0 })
        let clock = ContinuousClock()
        let t0 = clock.now
        let outcome = try await processor.ingest(automation: "bench", bytes: body, period: .previous7Days, aggregation: .minutes, now: start + 8 * 86_400)
        let seconds = Double((clock.now - t0).components.attoseconds) / 1e18 + Double((clock.now - t0).components.seconds)
        let r = outcome.recorded
        let rate = Double(r.records) / seconds
        results.append(PhaseResult(phase: "hae_ingest_7d_minutes", samples: r.records, seconds: seconds, samplesPerSecond: rate,
                                   archiveBytes: Measure.databaseBytes(homes.automation("bench").archivePath), peakRssBytes: Measure.peakRSS(),
                                   notes: String(format: "%@; body %.1f MB; %.2f x hp-node import (target at least 0.5)", r.status ?? r.outcome, Double(body.count) / 1_000_000, rate / importRate)))
        // The same body again: answered as a duplicate without decoding.
        let t1 = clock.now
        let again = try await processor.ingest(automation: "bench", bytes: body, period: .previous7Days, aggregation: .minutes, now: start + 8 * 86_400)
        let dupSeconds = Double((clock.now - t1).components.attoseconds) / 1e18 + Double((clock.now - t1).components.seconds)
        results.append(PhaseResult(phase: "hae_ingest_duplicate", samples: 0, seconds: dupSeconds, samplesPerSecond: 0, archiveBytes: 0,
                                   peakRssBytes: Measure.peakRSS(), notes: again.duplicate ? "duplicate" : "NOT a duplicate"))
        try Report.print(results, json: bench.json)
    }
}

/// `yyyy-MM-dd HH:mm:ss +0000` of Unix seconds, as Health Auto Export and Apple Health write dates.
enum HAESyntheticText {
    static func text(_ t: Double) -> String {
        let iso = CanonicalDate.string(t)
        return String(iso.prefix(10)) + " " + String(iso.dropFirst(11).prefix(8)) + " +0000"
    }
}
