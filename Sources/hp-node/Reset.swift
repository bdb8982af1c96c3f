import ArgumentParser
import HealthProbeArchive
import HealthProbeCLI

struct Reset: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Delete the archive (irreversible).",
        discussion: "Deletes the archive file and starts a new device chain. The archive secret is kept. Requires --yes-delete-archive.")

    @OptionGroup var options: HomeOptions

    @Flag(name: .long, help: "Confirm deleting the archive and all its history.")
    var yesDeleteArchive = false

    @Flag(name: .long, help: "Keep the device-chain seed, as a reinstall would: the next archive continues the same chain hash.")
    var keepChain = false

    func validate() throws {
        guard yesDeleteArchive else {
            throw ValidationError("reset deletes the archive and all its history; pass --yes-delete-archive to confirm")
        }
    }

    func run() async throws {
        let home = options.resolvedHome
        do {
            // Take the writer lock so a running capture is not pulled out from under.
            _ = try Archive.open(path: home.archivePath)
        }
        try home.reset(newChain: !keepChain)
        if options.json { try Output.json(["deleted": home.archivePath, "new_chain": keepChain ? "no" : "yes"]); return }
        print("deleted \(home.archivePath)\(keepChain ? "; the device-chain seed was kept" : "; the next capture starts a new device chain")")
    }
}
