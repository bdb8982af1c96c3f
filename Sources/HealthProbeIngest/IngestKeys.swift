import Foundation
import HealthProbeArchive
import HealthProbeCanonical

/// The API keys of a node's ingest endpoint, one per Health Auto Export automation (the
/// key names it, and so its capture home). Kept in the key directory as
/// `ingest-keys.json` (mode 0600); only `SHA-256("hp:v2:ingest_key:" + key)` is stored,
/// so the file cannot be used to post.
public struct IngestKeys: Sendable {
    /// One key as stored.
    public struct Entry: Codable, Sendable, Equatable {
        public var name: String
        public var keyHash: String
        public var createdAt: Double
        /// The last 4 characters of the key, to tell keys apart in lists.
        public var hint: String
    }

    static let file = "ingest-keys.json"
    let keys: KeyStore

    public init(keys: KeyStore) { self.keys = keys }

    /// Automation names: 1 to 40 of a-z, 0-9, `-` and `_`, starting with a letter or digit.
    public static func validName(_ name: String) -> Bool {
        let b = Array(name.utf8)
        guard (1...40).contains(b.count), let f = b.first, isAlnum(f) else { return false }
        return b.allSatisfy { isAlnum($0) || $0 == 0x2D || $0 == 0x5F }
    }
    private static func isAlnum(_ c: UInt8) -> Bool { (0x61...0x7A).contains(c) || (0x30...0x39).contains(c) }

    /// The stored keys, by name.
    public func list() throws -> [Entry] {
        guard let text = try keys.readSecretFile(Self.file) else { return [] }
        do { return try JSONDecoder().decode([Entry].self, from: Data(text.utf8)).sorted { $0.name < $1.name } } catch {
            throw ArchiveError(.keyDirectory, "\(keys.directory)/\(Self.file) is damaged; delete it and create the keys again (`hp-node ingest-key create NAME`)", cause: error)
        }
    }

    /// Makes a new key for automation `name` and returns it: the only time it is shown.
    public func create(name: String, now: Double) throws -> String {
        guard Self.validName(name) else {
            throw ArchiveError(.invalidInput, "an automation name is 1 to 40 of a-z, 0-9, '-' and '_', starting with a letter or digit")
        }
        var all = try list()
        guard !all.contains(where: { $0.name == name }) else {
            throw ArchiveError(.invalidInput, "a key named \(name) exists; revoke it first (`hp-node ingest-key revoke \(name)`) to replace it")
        }
        var random = SystemRandomNumberGenerator()
        let key = "hpk_" + ArchiveHasher.hex((0..<32).map { _ in UInt8.random(in: 0...255, using: &random) })
        all.append(Entry(name: name, keyHash: Self.hash(key), createdAt: now, hint: String(key.suffix(4))))
        try save(all)
        return key
    }

    /// Removes the key of `name`; false when there was none.
    public func revoke(name: String) throws -> Bool {
        var all = try list()
        let before = all.count
        all.removeAll { $0.name == name }
        guard all.count != before else { return false }
        try save(all)
        return true
    }

    /// The automation a presented key belongs to, nil for anything else. Every stored
    /// hash is compared in constant time, so the answer's timing says nothing.
    public func automation(forKey key: String) throws -> String? {
        guard key.utf8.count <= 200 else { return nil }
        let presented = Self.hash(key)
        var found: String?
        for e in try list() where ArchiveHasher.constantTimeEqual(presented, e.keyHash) { found = e.name }
        return found
    }

    static func hash(_ key: String) -> String { ArchiveHasher.sha256(.ingestKey, Array(key.utf8)) }

    private func save(_ all: [Entry]) throws {
        let e = JSONEncoder()
        e.outputFormatting = [.sortedKeys, .prettyPrinted]
        try keys.writeSecretFile(Self.file, contents: String(decoding: try e.encode(all), as: UTF8.self))
    }
}
