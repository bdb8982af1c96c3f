import Foundation
import HealthProbeArchive

/// Files that are on disk before anyone is told they are: written to a temporary
/// name, synced, renamed into place, and the directory synced.
enum DurableFile {
    /// Writes `bytes` at `path` (mode 0600) durably; the old file, if any, stays whole until the rename.
    static func put(_ path: String, _ bytes: [UInt8]) throws {
        let tmp = path + ".tmp-\(getpid())"
        let fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw ArchiveError(.storage, "cannot write \(tmp): \(String(cString: strerror(errno)))") }
        var done = 0
        while done < bytes.count {
            let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + done, $0.count - done) }
            guard n > 0 else { close(fd); unlink(tmp); throw ArchiveError(.storage, "cannot write \(tmp) (disk full?)") }
            done += n
        }
        let synced = fsync(fd)
        close(fd)
        guard synced == 0 else { unlink(tmp); throw ArchiveError(.storage, "cannot sync \(tmp) to disk") }
        guard rename(tmp, path) == 0 else { unlink(tmp); throw ArchiveError(.storage, "cannot move \(tmp) into place: \(String(cString: strerror(errno)))") }
        syncDirectory((path as NSString).deletingLastPathComponent)
    }

    /// Syncs the file at `path` (written and closed by someone else) to disk.
    static func sync(_ path: String) throws {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw ArchiveError(.storage, "cannot open \(path) to sync it: \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        guard fsync(fd) == 0 else { throw ArchiveError(.storage, "cannot sync \(path) to disk: \(String(cString: strerror(errno)))") }
    }

    /// Syncs a directory's entries (a rename into it) to disk.
    static func syncDirectory(_ directory: String) {
        let dfd = open(directory, O_RDONLY | O_CLOEXEC)
        if dfd >= 0 { fsync(dfd); close(dfd) }
    }

    /// The bytes at `path`, nil when there is no file.
    static func read(_ path: String) -> [UInt8]? {
        FileManager.default.contents(atPath: path).map { [UInt8]($0) }
    }
}
