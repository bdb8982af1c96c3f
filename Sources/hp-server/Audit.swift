import ArgumentParser
import Foundation
import HealthProbeCLI
import HealthProbeServer

struct AuditCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "audit",
        abstract: "Every admin and sharing action, newest first: who, what, on whom, when, from the web, the API, this CLI or a device (a restore token redeemed).")
    @OptionGroup var options: DataOptions
    @Option(name: .long, help: "How many entries (1 to 1000).") var limit = 100

    func validate() throws {
        guard (1...1000).contains(limit) else { throw ValidationError("--limit must be from 1 to 1000, got \(limit)") }
    }

    func run() async throws {
        let store = options.store
        try store.requireInitialized()
        let entries = try store.registry().audit(limit: limit)
        if options.json { try Output.json(entries); return }
        var t = TextTable(["when (UTC)", "who", "via", "what", "on", "detail"])
        for e in entries {
            t.add([Output.date(e.at), e.actor, e.via.rawValue, e.action.rawValue, e.shownTarget, e.detail])
        }
        print(entries.isEmpty ? "no admin or sharing actions recorded" : t.render())
    }
}
