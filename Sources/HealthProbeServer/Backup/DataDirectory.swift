import Foundation
import HealthProbeArchive

/// Checks on directories that backups and restores write into.
enum DataDirectory {
    /// Refuses a path that exists and is not an empty directory.
    static func requireEmpty(_ path: String, what: String) throws {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else { return }
        guard isDirectory.boolValue else {
            throw ArchiveError(.invalidState, "the \(what) \(path) is a file; give a new or empty directory")
        }
        let entries = try FileManager.default.contentsOfDirectory(atPath: path)
        if !entries.isEmpty {
            throw ArchiveError(.invalidState, "the \(what) \(path) is not empty (\(entries.count) entries); give a new or empty directory, nothing was written")
        }
    }

    /// A file's size in bytes (0 when unreadable).
    static func size(_ path: String) -> Int {
        (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
    }
}
