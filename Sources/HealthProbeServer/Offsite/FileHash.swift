import Crypto
import Foundation
import HealthProbeArchive

/// The lower-case hex SHA-256 of a file, read in 1 MiB chunks.
enum FileHash {
    static func sha256(_ path: String) throws -> String {
        guard let handle = FileHandle(forReadingAtPath: path) else {
            throw ArchiveError(.storage, "cannot read \(path) to hash it (is it readable?)")
        }
        defer { try? handle.close() }
        var hasher = SHA256()
        while let data = try handle.read(upToCount: 1 << 20), !data.isEmpty { hasher.update(data: data) }
        return SigV4.hex(hasher.finalize())
    }
}
