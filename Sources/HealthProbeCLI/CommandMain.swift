import ArgumentParser
import HealthProbeArchive

/// An executable's `main`: the process's settings first (`ProcessSettings`), before any
/// thread or connection exists, then the command line parsed and run as
/// swift-argument-parser's own `main` does.
public enum CommandMain {
    public static func run<Root: AsyncParsableCommand>(_ root: Root.Type) async {
        ProcessSettings.apply()
        do {
            var command = try root.parseAsRoot()
            if var asyncCommand = command as? AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch {
            root.exit(withError: error)
        }
    }
}
