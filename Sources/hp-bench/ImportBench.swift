import ArgumentParser
import Foundation
import HealthProbeArchive
import HealthProbeImport
import HealthProbeSimulator

/// `hp-bench import --records N`: writes a synthetic export.zip (realistic
/// element and attribute formats), then measures the first import, an
/// unchanged re-import, and a re-import with 1% of records changed.
struct ImportBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "import", abstract: "Measure the Apple Health export importer.")

    @Option(name: .long, help: "Number of records in the synthetic export.")
    var records: Int = 1_000_000

    @OptionGroup var bench: BenchOptions

    func validate() throws {
        guard records >= 100 else { throw ValidationError("--records must be at least 100") }
    }

    func run() async throws {
        let root = bench.workDirectory("import")
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        defer { bench.cleanUp(root) }
        var base = SyntheticExport(records: records)
        let (_, genA) = try Measure.time { try base.writeZip(to: root + "/export-a.zip") }
        base.editEvery = 100   // 1% of records changed
        let (_, genB) = try Measure.time { try base.writeZip(to: root + "/export-b.zip") }
        let zipBytes = (try FileManager.default.attributesOfItem(atPath: root + "/export-a.zip")[.size] as? NSNumber)?.int64Value ?? 0
        if !bench.json {
            FileHandle.standardError.write(Data(String(format: "generated two exports in %.1f s and %.1f s (zip %.1f MB each)\n", genA, genB, Double(zipBytes) / 1_048_576).utf8))
        }
        let home = ArchiveHome(root: root + "/home")
        var results: [PhaseResult] = []
        for (name, file) in [("first_import", "export-a.zip"), ("unchanged_reimport", "export-a.zip"), ("reimport_1pct_changed", "export-b.zip")] {
            let before = Measure.databaseBytes(home.archivePath)
            Measure.resetPeakRSS()
            let node = try home.open()
            var o = AppleHealthImporter.Options()
            o.pageSize = bench.pageSize
            o.transactionSamples = bench.transactionSamples
            let cpuBefore = Measure.cpuSeconds(pid: getpid())
            let (r, seconds) = try Measure.time { try AppleHealthImporter(node: node, options: o).importExport(at: root + "/" + file) }
            let bytes = Measure.databaseBytes(home.archivePath)
            let growth = before > 0 ? Double(bytes - before) / Double(before) * 100 : 0
            results.append(PhaseResult(phase: name, samples: r.records, seconds: seconds, samplesPerSecond: Double(r.records) / seconds,
                                       archiveBytes: bytes, peakRssBytes: Measure.peakRSS(),
                                       notes: "\(r.status); cpu \(String(format: "%.2f", Measure.cpuSeconds(pid: getpid()) - cpuBefore)) s; xml \(r.bytes / 1_048_576) MB; appeared \(r.appeared), changed \(r.changed), disappeared \(r.disappeared)" + (before > 0 ? String(format: "; growth %.2f%%", growth) : "")))
            if !bench.json { FileHandle.standardError.write(Data("\(name): \(String(format: "%.1f", seconds)) s\n".utf8)) }
        }
        try Report.print(results, json: bench.json)
    }
}
