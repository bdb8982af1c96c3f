import ArgumentParser
import Foundation
import HealthProbeArchive
import HealthProbeCLI
import HealthProbeSync

struct Sync: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Send every observation the server has not acknowledged, oldest first.",
        discussion: "Each bundle is built, verified from its bytes, sent in zlib parts, and recorded as acknowledged once the server has applied it. After a disconnect, run it again: it resumes from the server's position.")

    @OptionGroup var options: HomeOptions

    @Option(name: .long, help: "Server address, HOST:PORT.")
    var server: String

    func validate() throws {
        guard SyncAddress.parse(server) != nil else { throw ValidationError("--server must be HOST:PORT, got \(server)") }
    }

    func run() async throws {
        let node = try options.open()
        let (host, port) = SyncAddress.parse(server)!
        var client = SyncClient(node: node, outbox: options.resolvedHome.root + "/outbox", logger: NodeLogging.logger())
        let progress = ProgressLine(label: "syncing")
        client.onProgress = { seq, total in progress.update(done: seq, total: total, unit: "bundles") }
        let report = try await client.sync(host: host, port: port)
        progress.finish()
        if options.json { try Output.json(report); return }
        if report.sent == 0 && report.alreadyApplied == 0 {
            print("up to date: the server has all \(report.lastSequence) observations of this chain")
        } else {
            print("sent \(report.sent) bundle(s) (\(report.alreadyApplied) already applied); the server now has sequence \(report.lastSequence)")
            print("\(report.bytesOnWire) bytes on the wire for \(report.uncompressedBytes) bytes of bundles")
        }
    }
}
