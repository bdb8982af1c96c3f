import ArgumentParser
import HealthProbeCLI
import HealthProbeArchive

/// `hp-bench`: release-build benchmarks. Figures go in docs/benchmarks.md.
@main
struct HPBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "hp-bench",
        abstract: "Benchmarks for HealthProbe (build with -c release).",
        version: HealthProbeVersion.current,
        subcommands: [CaptureBench.self, ImportBench.self, SyncBench.self, HouseholdBench.self, ApplyBench.self, NormalizeBench.self, AnalyzeBench.self, ExportBench.self, WebBench.self, OverlapBench.self, IngestBench.self]
    )

    /// The process's settings first, then the command (`CommandMain`).
    static func main() async { await CommandMain.run(Self.self) }
}
