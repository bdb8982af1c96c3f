import Foundation
import GRDB
import Logging
import HealthProbeCanonical

/// A node's home directory: `archive/` holds the SQLite archive, `keys/` the
/// key directory (kept when the archive is deleted).
public struct ArchiveHome: Sendable {
    public let root: String

    public init(root: String) { self.root = root }

    /// `--home`, else `$HP_HOME`, else `$XDG_DATA_HOME/healthprobe`, else `~/.local/share/healthprobe`.
    public static func resolve(explicit: String?, environment: [String: String] = ProcessInfo.processInfo.environment) -> ArchiveHome {
        if let explicit, !explicit.isEmpty { return ArchiveHome(root: explicit) }
        if let env = environment["HP_HOME"], !env.isEmpty { return ArchiveHome(root: env) }
        if let xdg = environment["XDG_DATA_HOME"], !xdg.isEmpty { return ArchiveHome(root: xdg + "/healthprobe") }
        let home = environment["HOME"] ?? NSHomeDirectory()
        return ArchiveHome(root: home + "/.local/share/healthprobe")
    }

    public var archiveDirectory: String { root + "/archive" }
    public var archivePath: String { archiveDirectory + "/HealthProbeArchive.sqlite" }
    public var keyStore: KeyStore { KeyStore(directory: root + "/keys") }

    /// Whether an archive file exists.
    public var archiveExists: Bool { FileManager.default.fileExists(atPath: archivePath) }

    /// Opens the node archive, creating keys, archive and device chain as needed.
    public func open(mode: Archive.Mode = .readWrite, clock: any ArchiveClock = SystemClock(),
                     logger: Logger = Archive.silentLogger,
                     onMigration: (_ from: Int, _ to: Int) -> Void = { _, _ in }) throws -> NodeArchive {
        let keys = keyStore
        if mode == .readOnly {
            guard archiveExists else {
                throw ArchiveError(.notFound, "no archive in \(root); run `hp-node init --home \(root)` or a capture first")
            }
        }
        let secret = try keys.archiveSecret()
        let seed = try keys.deviceChainSeed()
        let archive = try Archive.open(path: archivePath, mode: mode, clock: clock, logger: logger, onMigration: onMigration)
        return try NodeArchive(archive: archive, secret: secret.bytes, seed: seed, clock: clock, createChain: mode == .readWrite)
    }

    /// Deletes the archive (never the archive secret). With `newChain`, also
    /// deletes the device-chain seed so the next archive starts a new chain.
    public func reset(newChain: Bool) throws {
        let fm = FileManager.default
        for suffix in ["", "-wal", "-shm", ".lock"] where fm.fileExists(atPath: archivePath + suffix) {
            try fm.removeItem(atPath: archivePath + suffix)
        }
        if newChain { try keyStore.resetChainSeed() }
    }
}

/// An archive opened by its node, with the node's hasher and current device chain.
public final class NodeArchive: Sendable {
    public let archive: Archive
    public let hasher: ArchiveHasher
    public let deviceChainID: Int64
    public let deviceChainHash: String
    public let clock: any ArchiveClock

    init(archive: Archive, secret: [UInt8], seed: KeyStore.LoadedKey, clock: any ArchiveClock, createChain: Bool) throws {
        self.archive = archive
        self.clock = clock
        hasher = ArchiveHasher(secret: secret)
        let chainHash = hasher.hmac(.deviceChain, ArchiveHasher.hex(seed.bytes))
        deviceChainHash = chainHash
        let id: Int64? = try archive.writer.read { db in
            try Int64.fetchOne(db, sql: "SELECT id FROM device_chains WHERE device_chain_hash = ?", arguments: [chainHash])
        }
        if let id {
            deviceChainID = id
        } else if createChain {
            let now = clock.now()
            deviceChainID = try archive.writer.write { db in
                try db.execute(sql: "INSERT INTO device_chains(device_chain_hash, created_at, recovered_from_keychain) VALUES (?, ?, ?)",
                               arguments: [chainHash, now, seed.existed ? 1 : 0])
                return db.lastInsertedRowID
            }
        } else {
            throw ArchiveError(.notFound, "the archive has no device chain for this key directory; run a capture first")
        }
    }
}
