import Foundation
#if canImport(Glibc)
import Glibc
#endif
import HealthProbeArchive

/// Checks on directories that backups and restores write into.
public enum DataDirectory {
    /// `path` absolute, its symbolic links resolved: the deepest part that exists is resolved
    /// (`..` after a link goes up from where the link points), the rest added as written.
    public static func resolved(_ path: String) -> String {
        let absolute = path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
        var existing = absolute, rest: [String] = []
        while !FileManager.default.fileExists(atPath: existing), existing != "/" {
            rest.insert((existing as NSString).lastPathComponent, at: 0)
            existing = (existing as NSString).deletingLastPathComponent
        }
        // realpath, not Foundation's textual standardizing: a `..` after a link is the link target's parent.
        var resolved = existing
        if let real = realpath(existing, nil) { resolved = String(cString: real); free(real) }
        for part in rest where part != "." { resolved = part == ".." ? (resolved as NSString).deletingLastPathComponent : (resolved as NSString).appendingPathComponent(part) }
        return resolved
    }

    /// Whether `path` is `directory` or lies inside it (both resolved).
    public static func contains(_ directory: String, _ path: String) -> Bool {
        lies(resolved(path), within: resolved(directory))
    }

    /// Whether resolved path `p` is resolved directory `d` or lies inside it.
    public static func lies(_ p: String, within d: String) -> Bool {
        p == d || p.hasPrefix(d.hasSuffix("/") ? d : d + "/")
    }

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

    /// Writes the new marker file `root/name` holding `text`, synced to disk. Refused when it
    /// exists (`MarkerExists`); a file half written is removed again.
    static func writeMarker(_ root: String, _ name: String, _ text: String) throws {
        let path = root + "/" + name
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            if errno == EEXIST { throw MarkerExists(path: path) }
            throw ArchiveError(.storage, "cannot create \(path) (errno \(errno)); is the directory writable and the disk not full?")
        }
        var ok = false
        defer {
            close(fd)
            if !ok { unlink(path) }
        }
        let bytes = Array(text.utf8)
        guard write(fd, bytes, bytes.count) == bytes.count, fsync(fd) == 0 else {
            throw ArchiveError(.storage, "cannot write \(path) (errno \(errno)); is the disk full?")
        }
        ok = true
    }

    /// `writeMarker` found the file there.
    struct MarkerExists: Error {
        let path: String
    }

    /// A file's size in bytes (0 when unreadable).
    static func size(_ path: String) -> Int {
        (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
    }
}
