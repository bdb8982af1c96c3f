import Foundation
import GRDB
import HealthProbeCanonical

/// A sample's 32-byte hash as the archive stores it since schema 9: a BLOB
/// inside, 64 lower-case hex digits at every edge (exports, bundles, CLI, JSON)
/// (docs/decisions/2026-11-24-compact-schema-v8.md). Blob order is hex order,
/// so an `ORDER BY` over the column is unchanged.
public enum StoredHash {
    /// Decodes 64 lower-case hex digits at `hex` into 32 bytes at `out`; false otherwise.
    @inline(__always)
    static func decode(_ hex: UnsafeBufferPointer<UInt8>, into out: UnsafeMutablePointer<UInt8>) -> Bool {
        guard let d = Digest32(hexDigits: hex) else { return false }
        d.withUnsafeBytes { UnsafeMutableRawPointer(out).copyMemory(from: $0.baseAddress!, byteCount: 32) }
        return true
    }

    /// The 32 bytes of a 64-digit lower-case hex hash, or nil.
    static func bytes(_ hex: String) -> [UInt8]? {
        ArchiveHasher.bytes(lowerHex: hex).flatMap { $0.count == 32 ? $0 : nil }
    }

    /// What a hash binds as: its 32 bytes, or (not a hash) the text itself, which
    /// matches no stored hash and which the columns' CHECK constraints refuse.
    public static func databaseValue(_ hex: String?) -> DatabaseValue {
        guard let hex else { return .null }
        if let b = bytes(hex) { return Data(b).databaseValue }
        return hex.databaseValue
    }

    /// `hp_unhex32(text)`: 64 lower-case hex digits to a 32-byte blob (NULL stays
    /// NULL). Anything else is an error, so a migration that meets one rolls back.
    static func registerFunctions(_ db: Database) {
        db.add(function: DatabaseFunction("hp_unhex32", argumentCount: 1, pure: true) { values in
            let v = values[0]
            if v.isNull { return nil }
            guard case .string(let s) = v.storage, let b = bytes(s) else {
                throw ArchiveError(.invalidState, "a stored hash is not 64 lower-case hex digits; the archive was not changed. Run `hp-node verify` on it with the build that wrote it")
            }
            return Data(b)
        })
    }
}
