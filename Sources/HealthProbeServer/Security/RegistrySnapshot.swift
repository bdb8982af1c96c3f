import Foundation
import GRDB
import HealthProbeArchive

/// Consistent copies of the registry taken while the server writes it.
extension DeviceRegistry {
    /// Copies the registry to a new file at `path` with SQLite's online backup (one
    /// read transaction: a consistent state, commits go on meanwhile), synced to disk.
    public func snapshot(to path: String) throws {
        if FileManager.default.fileExists(atPath: path) {
            throw ArchiveError(.invalidState, "\(path) already exists; a snapshot is written only to a new file (remove it or choose another)")
        }
        let target = try DatabaseQueue(path: path)
        try database.backup(to: target)
        try target.close()
        try Self.syncFile(path)
    }

    /// Copies the registry file at `source` (not opened as a registry: it may be a
    /// backup's, untrusted) to a new file at `path` with SQLite's backup, synced.
    public static func snapshot(ofFile source: String, to path: String) throws {
        var config = Configuration()
        config.readonly = true
        let reader: DatabaseQueue
        do { reader = try DatabaseQueue(path: source, configuration: config) } catch {
            throw ArchiveError(.invalidInput, "cannot read the registry \(source) as SQLite (\(error)); is it a HealthProbe server's server.sqlite?")
        }
        let target = try DatabaseQueue(path: path)
        do { try reader.backup(to: target) } catch {
            throw ArchiveError(.invalidInput, "cannot copy the registry \(source) (\(error)); is it a HealthProbe server's server.sqlite?")
        }
        try target.close()
        try reader.close()
        try syncFile(path)
    }

    /// Problems SQLite's quick check finds in the registry file (empty: none). For a
    /// registry read from a backup or object storage before it is trusted.
    public func quickCheck() throws -> [String] {
        try database.read { db in
            try String.fetchAll(db, sql: "PRAGMA quick_check").filter { $0 != "ok" }
        }
    }

    static func syncFile(_ path: String) throws {
        guard let handle = FileHandle(forUpdatingAtPath: path) else {
            throw ArchiveError(.storage, "cannot open \(path) to sync it to disk (is the directory writable?)")
        }
        defer { try? handle.close() }
        try handle.synchronize()
    }
}
