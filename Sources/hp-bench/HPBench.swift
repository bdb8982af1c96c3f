import ArgumentParser
import HealthProbeArchive

/// `hp-bench`: release-build benchmarks. Figures go in docs/benchmarks.md.
@main
struct HPBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "hp-bench",
        abstract: "Benchmarks for HealthProbe (build with -c release).",
        version: HealthProbeVersion.current,
        subcommands: [CaptureBench.self, ImportBench.self, SyncBench.self, HouseholdBench.self, ApplyBench.self, NormalizeBench.self, AnalyzeBench.self, ExportBench.self, WebBench.self]
    )

    /// Applies the process-wide settings (`ProcessSettings`), then runs the command.
    static func main() async {
        ProcessSettings.apply()
        await main(nil)
    }
}
