import Foundation
#if canImport(Glibc)
import Glibc
#endif
import HealthProbeArchive
import HealthProbeProtocol

/// File operations of the server's hot paths as plain system calls: each new
/// chain made a directory and copied the replica template through
/// `FileManager`, which stats every path component and copies attributes
/// (about 1.5 ms of CPU per new chain, perf).
public enum PrivateFiles {
    /// Makes directory `path` (mode 0700) unless it exists; its parent must exist.
    public static func makeDirectory(_ path: String) throws {
        if mkdir(path, 0o700) == 0 || errno == EEXIST { return }
        let code = errno
        // A missing parent: the slow way, which makes every missing component.
        if code == ENOENT {
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            return
        }
        throw ArchiveError(.storage, "cannot create the directory \(path) (errno \(code)); is the data directory writable and not full?")
    }

    /// Copies the file at `source` to a new file `target` (mode 0600; it must not
    /// exist) and syncs it to disk.
    static func copySynced(_ source: String, to target: String) throws {
        let input = open(source, O_RDONLY | O_CLOEXEC)
        guard input >= 0 else { throw ArchiveError(.storage, "cannot read \(source) (errno \(errno))") }
        defer { close(input) }
        let output = open(target, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard output >= 0 else { throw ArchiveError(.storage, "cannot create \(target) (errno \(errno)); is the data directory writable and not full?") }
        var ok = false
        defer {
            close(output)
            if !ok { unlink(target) }
        }
        var buffer = [UInt8](repeating: 0, count: 256 << 10)
        while true {
            let n = buffer.withUnsafeMutableBytes { read(input, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            guard n >= 0 else { throw ArchiveError(.storage, "cannot read \(source) (errno \(errno))") }
            if n == 0 { break }
            var done = 0
            while done < n {
                let w = buffer.withUnsafeBytes { write(output, $0.baseAddress! + done, n - done) }
                if w < 0 && errno == EINTR { continue }
                guard w > 0 else { throw ArchiveError(.storage, "cannot write \(target) (errno \(errno)); is the disk full?") }
                done += w
            }
        }
        guard fsync(output) == 0 else { throw ArchiveError(.storage, "cannot sync \(target) to disk (errno \(errno))") }
        ok = true
    }
}
