import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// An exclusive advisory lock (flock) held for the lifetime of the object.
public final class FileLock: Sendable {
    private let fd: Int32
    let path: String

    /// Takes the lock without waiting; throws `.locked` (with `busy` as its message,
    /// when given) if another process holds it.
    public init(path: String, busy: String? = nil) throws {
        self.path = path
        // The descriptor is stored only once the lock is held: a class whose initializer
        // throws after every property is set still runs its deinit, which would close the
        // descriptor a second time (by then perhaps another thread's socket).
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            throw ArchiveError(.storage, "cannot open lock file \(path): \(String(cString: strerror(errno)))")
        }
        if flock(fd, LOCK_EX | LOCK_NB) != 0 {
            close(fd)
            throw ArchiveError(.locked, busy ?? "the archive is in use by another HealthProbe process (lock \(path)); wait for it to finish and try again")
        }
        self.fd = fd
    }

    deinit {
        flock(fd, LOCK_UN)
        close(fd)
    }
}
