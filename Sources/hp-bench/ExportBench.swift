import ArgumentParser
import Foundation
import GRDB
import HealthProbeArchive

/// `hp-bench export --samples N`: JSON and CSV record exports of the N-sample
/// archive of `hp-bench analyze` (same setup, reusable with `--dir`), then
/// `verify-export` of each file.
struct ExportBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "export", abstract: "Measure record exports and their verification.")

    @Option(name: .long, help: "Number of samples.")
    var samples: Int = 1_000_000

    @OptionGroup var bench: BenchOptions

    func validate() throws { guard samples >= 1000 else { throw ValidationError("--samples must be at least 1000") } }

    func run() async throws { try measure() }

    func measure() throws {
        let root = bench.workDirectory("export")
        let home = ArchiveHome(root: root)
        defer { bench.cleanUp(root) }
        let clock = ManualClock(1_750_000_000)
        let node = try home.open(clock: clock)
        try AnalyzeBench.prepare(node: node, clock: clock, samples: samples, pageSize: bench.pageSize, quiet: bench.json)
        let bytes = Measure.databaseBytes(home.archivePath)
        var results: [PhaseResult] = []
        let out = root + "/exports"
        try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: true)
        for kind in [ExportKind.observationRecordsJSON, .observationRecordsCSV] {
            let path = out + "/records." + (kind == .observationRecordsJSON ? "json" : "csv")
            Measure.resetPeakRSS()
            var request = ExportRequest(kind: kind)
            request.at = 2
            let (r, seconds) = try Measure.time { try Exporter.run(node: node, request: request, out: path, overwrite: true) }
            let size = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int64) ?? 0
            results.append(PhaseResult(phase: kind.rawValue, samples: r.recordCount, seconds: seconds, samplesPerSecond: Double(r.recordCount) / seconds,
                                       archiveBytes: bytes, peakRssBytes: Measure.peakRSS(),
                                       notes: String(format: "file %.0f MB; manifest %@", Double(size) / 1e6, String(r.manifestHash.prefix(16)))))
            if !bench.json { FileHandle.standardError.write(Data("\(kind.rawValue): \(String(format: "%.1f", seconds)) s\n".utf8)) }
            Measure.resetPeakRSS()
            let (v, vs) = try Measure.time { try ExportVerifier.verify(path: path) }
            results.append(PhaseResult(phase: "verify_" + kind.rawValue, samples: v.items, seconds: vs, samplesPerSecond: Double(v.items) / vs,
                                       archiveBytes: bytes, peakRssBytes: Measure.peakRSS(), notes: v.ok ? "ok" : "FAILED: \(v.problems.first ?? "")"))
        }
        try Report.print(results, json: bench.json)
    }
}
