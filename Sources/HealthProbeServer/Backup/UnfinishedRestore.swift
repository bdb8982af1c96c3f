import Foundation
import HealthProbeArchive
import HealthProbeCanonical

/// The file a restore writes into its target first and removes last
/// (`ServerRestore.run`): a restore that stopped before its end (killed, the machine
/// down) leaves it, and no command takes such a directory for a data directory, nor
/// does `hp-server init` make one of it: half its chains would pass every check.
enum UnfinishedRestore {
    static let fileName = "restore-unfinished"

    static func path(_ root: String) -> String { root + "/" + fileName }

    /// Writes the file (synced) naming the source and when the restore began; refused when
    /// another restore wrote it first (two restores into one directory).
    static func begin(_ root: String, source: String, now: Double) throws {
        let text = "hp-server restore from \(source), begun \(CanonicalDate.string(now)), has not finished. Unless it is still running, empty this directory and run the restore again.\n"
        do { try DataDirectory.writeMarker(root, fileName, text) } catch is DataDirectory.MarkerExists {
            try refuse(root)
        }
    }

    /// Removes the file once the restore is complete.
    static func end(_ root: String) throws {
        try FileManager.default.removeItem(atPath: path(root))
    }

    /// Throws, naming how to recover, when `root` holds an unfinished restore.
    static func refuse(_ root: String) throws {
        guard FileManager.default.fileExists(atPath: path(root)) else { return }
        // The time it began, from the file's own text (none when it cannot be read).
        let text = (try? String(contentsOfFile: path(root), encoding: .utf8)) ?? ""
        let begun = text.range(of: ", begun ").map { " (begun " + text[$0.upperBound...].prefix(24) + ")" } ?? ""
        throw ArchiveError(.invalidState, "\(root) holds a restore that is still running or did not finish\(begun): some of its chains may be missing or short. "
                           + "If no restore is running, empty the directory, keeping it (find \(root)/ -mindepth 1 -delete), and run `hp-server restore` again")
    }
}
