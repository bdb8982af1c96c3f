import Foundation
import Testing
import HealthProbeTestSupport

/// Every command's `--help` of both CLIs, walked from the root through each SUBCOMMANDS
/// list, is the text recorded in `Tests/fixtures/help/` (swift-argument-parser's own
/// practice): a changed option, default or abstract shows up in review. A new command
/// or a deliberate change is recorded with `HP_RECORD_HELP=1 swift test --filter HelpTextTests`.
@Suite("Help text snapshots", .blocksOnTools)
struct HelpTextTests {
    static let directory = repositoryRoot.appendingPathComponent("Tests/fixtures/help")
    static let recording = ProcessInfo.processInfo.environment["HP_RECORD_HELP"] == "1"

    /// The subcommand names listed under SUBCOMMANDS in `help` (a default one is marked).
    static func subcommands(_ help: String) -> [String] {
        guard let start = help.range(of: "SUBCOMMANDS:\n") else { return [] }
        var names: [String] = []
        for line in help[start.upperBound...].split(separator: "\n", omittingEmptySubsequences: false) {
            if line.isEmpty || !line.hasPrefix("  ") { break }
            // A command's line starts two spaces in; its wrapped abstract is indented further.
            guard !line.hasPrefix("   "), let name = line.split(separator: " ").first else { continue }
            names.append(String(name))
        }
        return names
    }

    func walk(_ tool: String) throws -> Int {
        var queue: [[String]] = [[]]
        var checked = 0
        while let path = queue.first {
            queue.removeFirst()
            let (status, out, err) = try runTool(tool, path + ["--help"])
            #expect(status == 0, "\(tool) \(path.joined(separator: " ")) --help: \(err)")
            let file = Self.directory.appendingPathComponent(([tool] + path).joined(separator: "-") + ".txt")
            if Self.recording {
                try out.write(to: file, atomically: true, encoding: .utf8)
            } else if let recorded = try? String(contentsOf: file, encoding: .utf8) {
                #expect(out == recorded, "\(tool) \(path.joined(separator: " ")) --help differs from \(file.lastPathComponent); if the change is meant, record it with HP_RECORD_HELP=1")
            } else {
                Issue.record("no recorded help for `\(tool) \(path.joined(separator: " "))`: record it with HP_RECORD_HELP=1 swift test --filter HelpTextTests")
            }
            checked += 1
            for sub in Self.subcommands(out) where sub != "help" { queue.append(path + [sub]) }
        }
        return checked
    }

    @Test("hp-node: every command's help is the recorded one")
    func node() throws {
        #expect(try walk("hp-node") >= 25)
    }

    @Test("hp-server: every command's help is the recorded one")
    func server() throws {
        #expect(try walk("hp-server") >= 15)
    }

    @Test("the walk reads SUBCOMMANDS lists, wrapped abstracts and default markers included")
    func parsing() {
        let help = "OVERVIEW: x\n\nSUBCOMMANDS:\n  init                    Create keys and\n                          an archive.\n  cache (default)         Cache.\n\n  See 'x help <subcommand>' for detailed help.\n"
        #expect(Self.subcommands(help) == ["init", "cache"])
    }
}
