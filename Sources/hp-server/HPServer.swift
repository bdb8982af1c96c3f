import Foundation
import ArgumentParser
import HealthProbeArchive

/// `hp-server`: the household server. Sync (serve) arrives with the sync protocol.
@main
struct HPServer: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "hp-server",
        abstract: "The household server: per-chain replicas of device archives.",
        version: HealthProbeVersion.current,
        subcommands: [Init.self]
    )
}

struct Init: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Create a server data directory.")

    @Option(name: .long, help: "The server's data directory.")
    var data: String

    func run() async throws {
        let chains = data + "/chains"
        try FileManager.default.createDirectory(atPath: chains, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        print("initialized \(data)")
    }
}
