import Foundation

/// Where `hp-server restore` reads a backup from: a backup directory or object
/// storage. Nothing read from one is trusted: the registry is checked, every
/// bundle is verified and applied as the server does on receipt.
public protocol RestoreSource: Sendable {
    /// Where it is, for messages.
    var location: String { get }
    /// Writes the registry snapshot to the new file `registry` and the TLS identity's files into `tls`.
    func fetchRegistryAndIdentity(registry: String, tls: String) async throws
    /// The chains (lower-case hex) and, per chain, its bundles' sequences with what names each.
    func bundles() async throws -> [String: [RestoreSourceBundle]]
    /// Writes a bundle's bytes to the new file `path` (checked against its content hash when it has one).
    func fetch(_ bundle: RestoreSourceBundle, to path: String) async throws
    /// The chain-state digest each chain had when the backup was taken, when the source records it.
    func expectedDigests() async throws -> [String: String]
}

/// One stored bundle in a restore source.
public struct RestoreSourceBundle: Sendable, Equatable {
    public var sequence: Int
    /// A path or an object key.
    public var reference: String
    /// The lower-case hex SHA-256 of the bytes, when the source names it (object keys do).
    public var sha256: String?
    public var gzip: Bool

    public init(sequence: Int, reference: String, sha256: String?, gzip: Bool) {
        self.sequence = sequence
        self.reference = reference
        self.sha256 = sha256
        self.gzip = gzip
    }
}
