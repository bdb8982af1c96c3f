import ArgumentParser
import Foundation
import GRDB
import HealthProbeArchive
import HealthProbeSimulator

/// `hp-bench capture --samples N`: first capture of N samples over several
/// types (full-scan runs), an unchanged re-capture, then a re-capture with 1%
/// of samples edited and 1% deleted.
struct CaptureBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "capture", abstract: "Measure the capture write path.")

    @Option(name: .long, help: "Number of samples.")
    var samples: Int = 1_000_000

    @OptionGroup var bench: BenchOptions

    @Flag(name: .long, help: "Samples without HealthKit UUIDs (as in Apple Health exports).")
    var noUuid = false

    func validate() throws {
        guard samples >= 100 else { throw ValidationError("--samples must be at least 100") }
    }

    static let types: [SampleTypeDescriptor] = [
        "HeartRate", "StepCount", "ActiveEnergyBurned", "BasalEnergyBurned", "DistanceWalkingRunning",
        "HeartRateVariabilitySDNN", "RespiratoryRate", "OxygenSaturation",
    ].map { SampleTypeDescriptor("HKQuantityTypeIdentifier" + $0) }

    static let source = SourceDescriptor(name: "Bench Watch", bundleIdentifier: "com.apple.health.bench", productType: "Watch6,1", version: "10.1", operatingSystemVersion: "10.1")
    static let device = DeviceDescriptor(name: "Apple Watch", manufacturer: "Apple Inc.", model: "Watch", hardwareVersion: "Watch6,1", softwareVersion: "10.1")

    /// Sample `i` of type `t` in generation `gen` (0 first; 2 edits 1% and drops 1%).
    static func sample(type t: Int, index i: Int, generation: Int) -> CapturedSample? {
        let h = SplitMix.hash(UInt64(t), UInt64(i), 77)
        let bucket = h % 100
        if generation == 2 && bucket == 1 { return nil }
        var value = Double(40 + h % 120)
        if generation == 2 && bucket == 0 { value += 1 }
        // A minute apart, wrapping every 50M samples so that the large index offsets other
        // benches give each node (household) stay inside the dates bundles accept (to 2200).
        let start = 1_700_000_000 + Double(i % 50_000_000) * 60
        return CapturedSample(uuid: SplitMix.uuid(h, SplitMix.mix(h)), startDate: start, endDate: start + 30, valueKind: .quantity,
                              numericValue: value, unit: "count/min", source: source, device: device)
    }

    func run() async throws {
        let root = bench.workDirectory("capture")
        let home = ArchiveHome(root: root)
        defer { bench.cleanUp(root) }
        let perType = samples / Self.types.count
        let total = perType * Self.types.count
        var results: [PhaseResult] = []
        let clock = ManualClock(1_750_000_000)
        let node = try home.open(clock: clock)
        for (gen, name) in ["first_capture", "unchanged_recapture", "recapture_1pct_edited_1pct_deleted"].enumerated() {
            clock.advance(3600)
            let bytesBefore = Measure.databaseBytes(home.archivePath)
            Measure.resetPeakRSS()
            var seen = 0
            var changes = PageResult()
            var completing = 0.0
            let cpuBefore = Measure.cpuSeconds(pid: getpid())
            let (status, seconds) = try Measure.time { () throws -> ObservationStatus in
                let session = try CaptureSession.begin(node, context: ObservationContext(triggerReason: .benchmark, selectedTypes: Self.types.map(\.identifier)))
                for (ti, type) in Self.types.enumerated() {
                    let run = try session.beginTypeRun(type, kind: .fullScan)
                    let pipeline = PipelinedPageWriter(run: run, transactionSamples: bench.transactionSamples)
                    var page: [CapturedSample] = []
                    page.reserveCapacity(bench.pageSize)
                    for i in 0..<perType {
                        if var s = Self.sample(type: ti, index: i, generation: gen) {
                            if noUuid { s.uuid = nil }
                            page.append(s)
                        }
                        if page.count == bench.pageSize || i == perType - 1 {
                            seen += page.count
                            try pipeline.submit(page, to: run)
                            page = []
                            page.reserveCapacity(bench.pageSize)
                        }
                    }
                    let pr = try pipeline.flush()
                    changes.appeared += pr.appeared
                    changes.changed += pr.changed
                    let (r, c) = try Measure.time { try run.complete() }
                    completing += c
                    changes.disappeared += r.deletedEvents
                }
                return try session.finish()
            }
            let bytes = Measure.databaseBytes(home.archivePath)
            let growth = bytesBefore > 0 ? Double(bytes - bytesBefore) / Double(bytesBefore) * 100 : 0
            results.append(PhaseResult(phase: name, samples: seen, seconds: seconds, samplesPerSecond: Double(seen) / seconds,
                                       archiveBytes: bytes, peakRssBytes: Measure.peakRSS(),
                                       notes: "\(status.rawValue); cpu \(String(format: "%.2f", Measure.cpuSeconds(pid: getpid()) - cpuBefore)) s; completing runs \(String(format: "%.2f", completing)) s; appeared \(changes.appeared), changed \(changes.changed), disappeared \(changes.disappeared)" + (gen > 0 ? String(format: "; growth %.2f%%", growth) : "")))
            if !bench.json { FileHandle.standardError.write(Data("\(name): \(String(format: "%.1f", seconds)) s\n".utf8)) }
        }
        _ = total
        try Report.print(results, json: bench.json)
    }
}
