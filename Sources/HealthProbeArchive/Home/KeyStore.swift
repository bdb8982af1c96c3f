import HealthProbeCanonical
import Crypto
import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The key directory standing in for the Keychain: the archive secret and the
/// device-chain seed, each a file of 64 lower-case hex characters, mode 0600,
/// written atomically (temp file, fsync, rename, fsync directory).
/// It lives apart from the archive so deleting the archive keeps the keys.
public struct KeyStore: Sendable {
    public let directory: String

    public static let secretFile = "archive-secret"
    public static let chainSeedFile = "device-chain-seed"

    public init(directory: String) { self.directory = directory }

    /// A key and whether it already existed before this call.
    public struct LoadedKey: Sendable {
        public let bytes: [UInt8]
        public let existed: Bool
    }

    /// Loads the archive secret, creating it if missing.
    public func archiveSecret() throws -> LoadedKey { try loadOrCreate(Self.secretFile) }

    /// Loads the device-chain seed, creating it if missing.
    public func deviceChainSeed() throws -> LoadedKey { try loadOrCreate(Self.chainSeedFile) }

    /// The key files naming a chain (the archive secret, the device-chain seed) that are not
    /// here; creates none. A restore on a new device needs both from the old one.
    public func missingChainKeyFiles() -> [String] {
        [Self.secretFile, Self.chainSeedFile].filter { !FileManager.default.fileExists(atPath: directory + "/" + $0) }
    }

    /// Deletes the device-chain seed so the next capture starts a new chain.
    public func resetChainSeed() throws {
        let path = directory + "/" + Self.chainSeedFile
        if FileManager.default.fileExists(atPath: path) {
            try FileManager.default.removeItem(atPath: path)
        }
    }

    func loadOrCreate(_ name: String) throws -> LoadedKey {
        try ensureDirectory()
        let path = directory + "/" + name
        if FileManager.default.fileExists(atPath: path) {
            return LoadedKey(bytes: try read(path), existed: true)
        }
        var bytes = [UInt8](repeating: 0, count: 32)
        var rng = SystemRandomNumberGenerator()
        for i in bytes.indices { bytes[i] = UInt8.random(in: .min ... .max, using: &rng) }
        try writeAtomically(path: path, contents: ArchiveHasher.hex(bytes) + "\n")
        return LoadedKey(bytes: bytes, existed: false)
    }

    private func ensureDirectory() throws {
        var isDir: ObjCBool = false
        if FileManager.default.fileExists(atPath: directory, isDirectory: &isDir) {
            guard isDir.boolValue else {
                throw ArchiveError(.keyDirectory, "key directory \(directory) exists but is not a directory")
            }
            return
        }
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true,
                                                    attributes: [.posixPermissions: 0o700])
        } catch {
            throw ArchiveError(.keyDirectory, "cannot create key directory \(directory)", cause: error)
        }
    }

    private func read(_ path: String) throws -> [UInt8] {
        let text: String
        do { text = try String(contentsOfFile: path, encoding: .utf8) } catch {
            throw ArchiveError(.keyDirectory, "cannot read key file \(path)", cause: error)
        }
        let hex = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard hex.utf8.count == 64, let bytes = ArchiveHasher.bytes(lowerHex: hex) else {
            throw ArchiveError(.keyDirectory, "key file \(path) is damaged: expected 64 lower-case hex characters. Restore it from a backup, or delete it to start a new device chain (UUID hashes will then differ)")
        }
        return bytes
    }

    /// Writes `name` in the key directory atomically, mode 0600 (other secrets than the two keys).
    public func writeSecretFile(_ name: String, contents: String) throws {
        try ensureDirectory()
        try writeAtomically(path: directory + "/" + name, contents: contents)
    }

    /// The contents of `name` in the key directory, nil when it does not exist.
    public func readSecretFile(_ name: String) throws -> String? {
        let path = directory + "/" + name
        guard FileManager.default.fileExists(atPath: path) else { return nil }
        do { return try String(contentsOfFile: path, encoding: .utf8) } catch {
            throw ArchiveError(.keyDirectory, "cannot read key file \(path)", cause: error)
        }
    }

    private func writeAtomically(path: String, contents: String) throws {
        let tmp = path + ".tmp-\(getpid())"
        let fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            throw ArchiveError(.keyDirectory, "cannot write key file \(tmp): \(String(cString: strerror(errno)))")
        }
        let bytes = Array(contents.utf8)
        let written = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        let synced = fsync(fd)
        close(fd)
        guard written == bytes.count, synced == 0 else {
            unlink(tmp)
            throw ArchiveError(.keyDirectory, "cannot write key file \(path) (disk full?)")
        }
        guard rename(tmp, path) == 0 else {
            unlink(tmp)
            throw ArchiveError(.keyDirectory, "cannot move key file into place at \(path): \(String(cString: strerror(errno)))")
        }
        let dfd = open(directory, O_RDONLY | O_CLOEXEC)
        if dfd >= 0 { fsync(dfd); close(dfd) }
    }
}
