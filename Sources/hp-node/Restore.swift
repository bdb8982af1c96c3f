import ArgumentParser
import Foundation
import HealthProbeArchive
import HealthProbeCLI
import HealthProbeNode
import HealthProbeProtocol

struct Restore: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Bring this node's history back from its server: after `reset --keep-chain`, or on a replacement device.",
        discussion: """
            Fetches the chain's bundles from the enrolled server one at a time, verifies each as the server does, applies it, and checks that the archive's chain state after it equals the server's; then the node captures and syncs on as the same chain. Interrupted, run it again: it continues after the last bundle applied.

            The chain is the one the key directory's archive secret and device-chain seed name (keys/, the Keychain's stand-in): a replacement device needs the old device's two key files in HOME/keys first, and a restore token from the administrator (`hp-server enroll --name NEW --restore-chain PREFIX`), given here with --token.
            """)

    @OptionGroup var options: HomeOptions

    @Option(name: .long, help: "A restore token for this (replacement) device, from `hp-server enroll --restore-chain`; enrolls first.")
    var token: String?

    @Option(name: .long, help: "Server address, HOST:PORT (default: the enrolled address).")
    var server: String?

    func validate() throws {
        if let server, SyncAddress.parse(server) == nil { throw ValidationError("--server must be HOST:PORT, got \(server)") }
        if let token { do { _ = try EnrollmentToken(text: token) } catch { throw ValidationError("--token: \(error)") } }
    }

    func run() async throws {
        let home = options.resolvedHome
        let keys = home.keyStore
        let missing = keys.missingChainKeyFiles()
        guard missing.isEmpty else {
            throw ValidationError("\(keys.directory) has no \(missing.joined(separator: " or ")): the chain to restore is the one the old device's keys name. Copy its archive-secret and device-chain-seed (its Keychain backup) into \(keys.directory), mode 0600, then run this again")
        }
        // Both there: read (never made) and checked, so a damaged copy is named before anything is fetched.
        _ = try keys.archiveSecret()
        _ = try keys.deviceChainSeed()
        if let token {
            if let existing = try NodeEnrollment.load(keys) {
                throw ValidationError("this node is already enrolled as \(existing.name). To restore with this restore token instead, enroll with it in place of that enrollment, "
                                      + "`hp-node enroll TOKEN --replace`, then run `hp-node restore`; or leave out --token to restore with the enrollment it has")
            }
            let enrollment = try await SyncClient.enroll(token: try EnrollmentToken(text: token), clientTime: Date().timeIntervalSince1970)
            try enrollment.save(keys)
            FileHandle.standardError.write(Data("enrolled as \(enrollment.name) with \(enrollment.address)\n".utf8))
        }
        let enrollment = try requireEnrollment(options, or: "a replacement device: ask the administrator for a restore token (`hp-server enroll --name NEW --restore-chain PREFIX`) and run `hp-node restore --token TOKEN`")
        let node = try options.open()
        let address = server.flatMap { SyncAddress.parse($0) }
        var restore = NodeRestore(node: node, logger: NodeLogging.logger())
        let progress = ProgressLine(label: "restoring")
        restore.onProgress = { seq, total in progress.update(done: seq, total: total, unit: "bundles") }
        let report = try await restore.restore(enrollment, host: address?.host, port: address?.port)
        progress.finish()
        if options.json { try Output.json(report); return }
        guard report.lastSequence > 0 else {
            print("the server holds no bundle of chain \(node.deviceChainHash.prefix(12)): nothing to restore (are these the old device's keys?)")
            return
        }
        var t = TextTable(["chain", "bundles restored", "server's last", "visible records", "chain state (equal to the server's)"])
        t.add([String(node.deviceChainHash.prefix(12)), "\(report.restored)", "\(report.lastSequence)", "\(report.visibleRecords)",
               report.chainStateDigest.map { String($0.prefix(16)) + "..." } ?? "-"])
        print(t.render())
        print(report.restored == 0 ? "already restored: this archive holds every bundle the server has" : "restored in \(String(format: "%.1f", report.seconds)) s; capture and sync on as before")
    }
}
