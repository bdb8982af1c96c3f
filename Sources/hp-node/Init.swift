import ArgumentParser
import HealthProbeArchive
import HealthProbeCLI

struct Init: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Create the home directory: keys and an empty archive.")

    @OptionGroup var options: HomeOptions

    struct Result: Codable {
        var home: String
        var archive: String
        var keyDirectory: String
        var deviceChainHash: String
        var recoveredFromKeychain: Bool
        var schemaVersion: Int
    }

    func run() async throws {
        let home = options.resolvedHome
        let node = try options.open()
        let status = try await node.archive.status(chain: node.deviceChainID)
        let r = Result(home: home.root, archive: home.archivePath, keyDirectory: home.keyStore.directory,
                       deviceChainHash: node.deviceChainHash, recoveredFromKeychain: status.recoveredFromKeychain,
                       schemaVersion: status.schemaVersion)
        if options.json { try Output.json(r); return }
        print("home            \(r.home)")
        print("archive         \(r.archive)")
        print("key directory   \(r.keyDirectory)")
        print("device chain    \(r.deviceChainHash.prefix(16))\(r.recoveredFromKeychain ? " (recovered from the key directory)" : "")")
        print("schema version  \(r.schemaVersion)")
    }
}
