import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A pull source of bytes (a file, or a zip entry being inflated).
protocol ByteSource: AnyObject {
    /// Reads up to `max` bytes; 0 at the end.
    func read(_ buffer: UnsafeMutablePointer<UInt8>, _ max: Int) throws -> Int
    /// Total size when known (for progress).
    var totalBytes: Int64? { get }
    func close()
}

/// A file read with POSIX `read`.
final class FileByteSource: ByteSource {
    /// -1 once closed: closing twice could close a descriptor the process has since reused.
    private var fd: Int32
    let totalBytes: Int64?
    let path: String

    init(path: String) throws {
        self.path = path
        fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            throw ImportError(.notFound, "cannot open \(path): \(String(cString: strerror(errno)))")
        }
        var st = stat()
        totalBytes = fstat(fd, &st) == 0 ? Int64(st.st_size) : nil
    }

    func read(_ buffer: UnsafeMutablePointer<UInt8>, _ max: Int) throws -> Int {
        while true {
            let n = Glibc.read(fd, buffer, max)
            if n >= 0 { return n }
            if errno == EINTR { continue }
            throw ImportError(.io, "reading \(path) failed: \(String(cString: strerror(errno)))")
        }
    }

    func close() {
        guard fd >= 0 else { return }
        Glibc.close(fd)
        fd = -1
    }

    deinit { close() }
}
