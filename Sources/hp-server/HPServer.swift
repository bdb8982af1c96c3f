import ArgumentParser
import Foundation
import HealthProbeArchive
import HealthProbeCLI
import HealthProbeServer
import HealthProbeProtocol

/// `hp-server`: the household server. Each device chain has its own replica archive.
@main
struct HPServer: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "hp-server",
        abstract: "The household server: per-chain replicas of device archives.",
        discussion: "Start with `hp-server init --data DIR`, add people with `hp-server person add`, issue a token per device with `hp-server enroll --person P`, then `hp-server serve` (add `--web HOST:PORT` for the dashboard). Sync runs over TLS pinned by the certificate fingerprint in each token. docs/operations.md covers install, backup, verify and upgrade.",
        version: HealthProbeVersion.current,
        subcommands: [Init.self, PersonCommand.self, Enroll.self, Revoke.self, Devices.self, Serve.self, Apply.self, Chains.self, Bundles.self, Digest.self, ServerVerify.self, ServerCompact.self, ServerBackupCommand.self, ServerRestoreCommand.self, ServerAdoptCommand.self, HouseholdCommand.self, AuditCommand.self, AlertCommand.self]
    )

    /// The process's settings first, then the command (`CommandMain`).
    static func main() async { await CommandMain.run(Self.self) }
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
        try options.store.requireNewOrInitialized()
        try options.store.create()
        let fingerprint = try options.store.identity().fingerprint
        if options.json { try Output.json(["data": options.data, "certificate_fingerprint": fingerprint]); return }
        print("initialized \(options.data)")
        print("certificate fingerprint (SHA-256): \(fingerprint)")
    }
}
