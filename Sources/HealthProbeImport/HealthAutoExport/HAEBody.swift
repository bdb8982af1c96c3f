#if canImport(Glibc)
import Glibc
#endif

/// A Health Auto Export body to decode: its bytes in memory, or its kept file read in
/// chunks (memory stays at one chunk however large the body).
public struct HAEBody: Sendable {
    enum Storage: Sendable {
        /// With a chunk size, read as if from a file in chunks of that many bytes (tests).
        case memory([UInt8], chunk: Int?)
        case file(HAEBodyFile)
    }

    let storage: Storage
    /// The body's size in bytes.
    public let count: Int

    /// The bytes already in memory.
    public static func memory(_ bytes: [UInt8]) -> HAEBody { HAEBody(storage: .memory(bytes, chunk: nil), count: bytes.count) }

    /// The bytes in memory, read `chunkBytes` at a time as a file would be: for tests of
    /// values that straddle two chunks.
    public static func memory(_ bytes: [UInt8], chunkBytes: Int) -> HAEBody {
        HAEBody(storage: .memory(bytes, chunk: max(1, chunkBytes)), count: bytes.count)
    }

    /// The file at `path`, read `chunkBytes` at a time.
    public static func file(_ path: String, chunkBytes: Int = 1 << 20) throws -> HAEBody {
        let f = try HAEBodyFile(path: path, chunkBytes: max(1, chunkBytes))
        return HAEBody(storage: .file(f), count: f.size)
    }
}

/// A body file open for reading at any offset (`pread`): readers that share it never
/// move each other's position.
final class HAEBodyFile: Sendable {
    let fd: Int32
    let path: String
    let size: Int
    let chunkBytes: Int

    init(path: String, chunkBytes: Int) throws {
        self.path = path
        self.chunkBytes = chunkBytes
        fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw ImportError(.notFound, "cannot open \(path): \(String(cString: strerror(errno)))") }
        var st = stat()
        guard fstat(fd, &st) == 0 else {
            let reason = String(cString: strerror(errno))
            close(fd)
            throw ImportError(.io, "cannot read the size of \(path): \(reason)")
        }
        size = Int(st.st_size)
    }

    /// Fills `buffer` from `offset` on; the bytes read, 0 at the end.
    func read(into buffer: inout [UInt8], at offset: Int) throws -> Int {
        try buffer.withUnsafeMutableBytes { b in
            var done = 0
            while done < b.count {
                let n = pread(fd, b.baseAddress! + done, b.count - done, off_t(offset + done))
                if n == 0 { break }
                if n < 0 {
                    if errno == EINTR { continue }
                    throw ImportError(.io, "reading \(path) failed: \(String(cString: strerror(errno)))")
                }
                done += n
            }
            return done
        }
    }

    deinit { close(fd) }
}
