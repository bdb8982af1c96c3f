import Foundation
#if canImport(Glibc)
import Glibc
#endif
import HealthProbeArchive

/// Which directory a data directory was set up in: the inode number and path of its
/// directory, recorded by `hp-server init`, `adopt`, `restore --new-home` and the first
/// `serve` that finds none. A directory whose inode differs is a copy of one (a `tar`, `cp -a`
/// or `rsync` of the live directory, or a move to another file system): like a restored copy
/// (`RestoredCopy`) it takes no scheduled backup and uploads nothing until `hp-server adopt`,
/// so that a copy served with the live `config.json` cannot write into the live server's
/// backups or bucket. A move within one file system (`mv`) keeps the inode and the home.
enum HomeDirectory {
    static let fileName = "home-directory"

    static func path(_ root: String) -> String { root + "/" + fileName }

    /// The inode number of the directory `root`; nil when it cannot be read.
    static func inode(_ root: String) -> UInt64? {
        var st = stat()
        guard stat(root, &st) == 0 else { return nil }
        return UInt64(st.st_ino)
    }

    /// What the record says: the inode and path it was made for; nil without a readable record.
    static func recorded(_ root: String) -> (inode: UInt64, path: String)? {
        guard let text = try? String(contentsOfFile: path(root), encoding: .utf8) else { return nil }
        var inode: UInt64?, path: String?
        for line in text.split(separator: "\n") {
            if line.hasPrefix("inode ") { inode = UInt64(line.dropFirst(6)) }
            if line.hasPrefix("path ") { path = String(line.dropFirst(5)) }
        }
        guard let inode, let path else { return nil }
        return (inode, path)
    }

    /// Records `root` as the directory it is now (replacing any record), synced to disk.
    static func record(_ root: String) throws {
        guard let inode = inode(root) else { throw ArchiveError(.storage, "cannot read \(root)'s inode number (errno \(errno))") }
        let directory = URL(fileURLWithPath: root).standardizedFileURL.path
        let text = "inode \(inode)\npath \(directory)\nThe directory this server data directory was set up in. A copy of it elsewhere (another inode) "
            + "takes no scheduled backup and uploads nothing to object storage until `hp-server adopt --data DIR`.\n"
        let temporary = path(root) + ".new"
        unlink(temporary)
        try DataDirectory.writeMarker(root, fileName + ".new", text)
        guard rename(temporary, path(root)) == 0 else {
            unlink(temporary)
            throw ArchiveError(.storage, "cannot write \(path(root)) (errno \(errno))")
        }
    }

    /// Records `root` when it has no record yet (a directory set up before records were kept).
    static func recordIfMissing(_ root: String) throws {
        guard !FileManager.default.fileExists(atPath: path(root)) else { return }
        try record(root)
    }

    /// Where `root` was copied or moved from, when its record names another directory; nil when
    /// it is its recorded home or has no record. A record that cannot be read counts as another
    /// directory's (`adopt` writes a good one).
    static func copiedFrom(_ root: String) -> String? {
        guard FileManager.default.fileExists(atPath: path(root)), let now = inode(root) else { return nil }
        guard let home = recorded(root) else { return "its home record (\(fileName)) cannot be read" }
        guard now != home.inode else { return nil }
        return "copied or moved from \(home.path), the directory it was set up in"
    }
}
