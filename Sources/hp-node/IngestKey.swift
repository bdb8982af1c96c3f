import ArgumentParser
import Foundation
import HealthProbeArchive
import HealthProbeCLI
import HealthProbeIngest

/// `hp-node ingest-key`: the keys of the Health Auto Export endpoint.
struct IngestKey: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ingest-key",
        abstract: "Keys for `hp-node serve --ingest`: one per Health Auto Export automation.",
        subcommands: [Create.self, List.self, Revoke.self])

    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Make a key for automation NAME and print it (the only time it is shown).",
            discussion: "The automation records into its own home, HOME/capture/hae-NAME (its own chain). Paste the key into the automation's headers as `Authorization: Bearer KEY`.")
        @OptionGroup var options: HomeOptions
        @Argument(help: "The automation's name: 1 to 40 of a-z, 0-9, '-' and '_'.") var name: String

        func validate() throws {
            guard IngestKeys.validName(name) else { throw ValidationError("NAME must be 1 to 40 of a-z, 0-9, '-' and '_', starting with a letter or digit") }
        }

        func run() async throws {
            let key = try IngestKeys(keys: options.resolvedHome.keyStore).create(name: name, now: Date().timeIntervalSince1970)
            if options.json { try Output.json(["name": name, "key": key, "home": CaptureHomes(home: options.resolvedHome).automation(name).root]); return }
            print(key)
            Output.err("key for automation \(name): send it as `Authorization: Bearer KEY`; it is not shown again (revoke and create to replace it)")
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "The keys, by automation name (never the keys themselves).")
        @OptionGroup var options: HomeOptions

        func run() async throws {
            let entries = try IngestKeys(keys: options.resolvedHome.keyStore).list()
            if options.json {
                try Output.json(entries.map { ["name": $0.name, "created_at": Output.date($0.createdAt), "ends_with": $0.hint] })
                return
            }
            var table = TextTable(["automation", "created", "key ends with"])
            for e in entries { table.add([e.name, Output.date(e.createdAt), e.hint]) }
            print(entries.isEmpty ? "no ingest keys; `hp-node ingest-key create NAME` makes one" : table.render())
        }
    }

    struct Revoke: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Remove automation NAME's key: its posts are refused from now on (its chain stays).")
        @OptionGroup var options: HomeOptions
        @Argument(help: "The automation's name.") var name: String

        func run() async throws {
            guard try IngestKeys(keys: options.resolvedHome.keyStore).revoke(name: name) else {
                throw ValidationError("no ingest key named \(name); `hp-node ingest-key list` shows them")
            }
            if options.json { try Output.json(["revoked": name]); return }
            print("revoked the key of \(name)")
        }
    }
}
