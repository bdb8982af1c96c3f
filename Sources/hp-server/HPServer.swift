import ArgumentParser
import Foundation
import HealthProbeArchive
import HealthProbeSync

/// `hp-server`: the household server. Each device chain has its own replica archive.
@main
struct HPServer: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "hp-server",
        abstract: "The household server: per-chain replicas of device archives.",
        discussion: "Network sync (serve) arrives with the sync protocol; bundles can already be applied from files.",
        version: HealthProbeVersion.current,
        subcommands: [Init.self, Serve.self, Apply.self, Chains.self, Bundles.self, Digest.self, ServerVerify.self, HouseholdCommand.self]
    )
}

/// Options every `hp-server` command takes.
struct DataOptions: ParsableArguments {
    @Option(name: .long, help: "The server's data directory.")
    var data: String

    @Flag(name: .long, help: "Print JSON for tools instead of tables.")
    var json = false

    var store: ServerStore { ServerStore(root: data) }
}

struct Init: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Create a server data directory.")
    @OptionGroup var options: DataOptions

    func run() async throws {
        try options.store.create()
        print("initialized \(options.data)")
    }
}
