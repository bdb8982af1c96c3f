import Foundation
#if canImport(Glibc)
import Glibc
#endif
import HealthProbeArchive

/// Which directory a data directory was set up in: its real path, inode number and file
/// system (device), recorded as JSON by `hp-server init`, `adopt`, `restore --new-home` and
/// the first `serve` that finds none. A directory with another inode (a `tar`, `cp -a` or
/// `rsync` copy, a restore in place), or on another file system at another path (a copy on
/// a disk of its own, whose root directory has the inode of every root), is a copy of one:
/// like a restored copy (`RestoredCopy`) it takes no scheduled backup and uploads nothing
/// until `hp-server adopt`, so that a copy served with the live `config.json` cannot write
/// into the live server's backups or bucket. A move within one file system (`mv`) keeps the
/// inode; `serve` then records the new path. Not caught: a copy that keeps the inode at the
/// same path on another machine (a disk image or snapshot mounted where the live one was).
enum HomeDirectory {
    static let fileName = "home-directory"
    /// A record is a few hundred bytes; a larger file is not read (it is not one).
    static let maximumBytes = 4096

    struct Record: Equatable {
        var path: String
        var device: UInt64
        var inode: UInt64
    }

    static func path(_ root: String) -> String { root + "/" + fileName }

    /// The directory `root` as it is now: its real path (symlinks resolved), device and inode.
    static func current(_ root: String) -> Record? {
        var st = stat()
        guard stat(root, &st) == 0, let real = realpath(root, nil) else { return nil }
        defer { free(real) }
        return Record(path: String(cString: real), device: UInt64(st.st_dev), inode: UInt64(st.st_ino))
    }

    /// What the record says; nil without a readable one.
    static func recorded(_ root: String) -> Record? {
        guard let handle = FileHandle(forReadingAtPath: path(root)) else { return nil }
        defer { try? handle.close() }
        guard let data = try? handle.read(upToCount: maximumBytes + 1), data.count <= maximumBytes,
              let object = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any],
              let path = object["path"] as? String, let device = object["device"] as? NSNumber, let inode = object["inode"] as? NSNumber,
              device.doubleValue >= 0, inode.doubleValue >= 0 else { return nil }
        return Record(path: path, device: device.uint64Value, inode: inode.uint64Value)
    }

    /// Records `root` as the directory it is now (replacing any record), synced to disk.
    static func record(_ root: String) throws {
        guard let now = current(root) else { throw ArchiveError(.storage, "cannot read \(root)'s real path and inode (errno \(errno))") }
        let object: [String: Any] = ["path": now.path, "device": now.device, "inode": now.inode,
                                     "note": "The directory this server data directory was set up in. A copy of it elsewhere takes no scheduled backup "
                                         + "and uploads nothing to object storage until `hp-server adopt --data DIR`."]
        let text = String(decoding: try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes]), as: UTF8.self) + "\n"
        let temporary = path(root) + ".new"
        unlink(temporary)
        try DataDirectory.writeMarker(root, fileName + ".new", text)
        guard rename(temporary, path(root)) == 0 else {
            let code = errno
            unlink(temporary)
            throw ArchiveError(.storage, "cannot write \(path(root)) (errno \(code))" + (code == EISDIR ? "; it is a directory: remove it" : ""))
        }
    }

    /// Records `root` when it has no record yet (a directory set up before records were kept),
    /// or a new path when it was moved within its file system (same inode and device).
    static func refresh(_ root: String) throws {
        guard FileManager.default.fileExists(atPath: path(root)) else { return try record(root) }
        guard let home = recorded(root), let now = current(root) else { return }
        if home.inode == now.inode, home.device == now.device, home.path != now.path { try record(root) }
    }

    /// Why `root` is not its recorded home: copied, moved to another disk or replaced; nil when
    /// it is, or has no record. A record that cannot be read counts as another directory's
    /// (`adopt` writes a good one).
    static func copiedFrom(_ root: String) -> String? {
        guard FileManager.default.fileExists(atPath: path(root)), let now = current(root) else { return nil }
        guard let home = recorded(root) else { return "with a \(fileName) record that cannot be read" }
        let from = String(home.path.prefix(300))
        if home.inode != now.inode {
            return home.path == now.path ? "not the directory recorded at \(from) (another inode: copied or restored in place)"
                                         : "copied or moved from \(from), the directory it was set up in"
        }
        if home.device != now.device, home.path != now.path { return "copied from \(from) (another file system)" }
        return nil
    }
}
