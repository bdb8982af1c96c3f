import Foundation
import GRDB
import HealthProbeArchive

/// The server's data directory: `chains/<device_chain_hash>/replica.sqlite`,
/// one replica archive (the v2 schema, with its `bundle_log`) per device chain.
/// Chains never share a file, so identities are never merged across chains.
struct ServerStore {
    let root: String
    var chainsDirectory: String { root + "/chains" }

    func create() throws {
        try FileManager.default.createDirectory(atPath: chainsDirectory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let marker = root + "/healthprobe-server"
        if !FileManager.default.fileExists(atPath: marker) {
            try Data("healthprobe server data directory\n".utf8).write(to: URL(fileURLWithPath: marker))
        }
    }

    func requireInitialized() throws {
        guard FileManager.default.fileExists(atPath: root + "/healthprobe-server") else {
            throw ArchiveError(.notFound, "\(root) is not a HealthProbe server data directory; run `hp-server init --data \(root)` first")
        }
    }

    func replicaPath(_ chainHash: String) -> String { chainsDirectory + "/\(chainHash)/replica.sqlite" }

    /// Chain hashes with a replica.
    func chains() throws -> [String] {
        try requireInitialized()
        return try FileManager.default.contentsOfDirectory(atPath: chainsDirectory)
            .filter { $0.count == 64 && FileManager.default.fileExists(atPath: replicaPath($0)) }.sorted()
    }

    /// The one chain whose hash starts with `prefix`.
    func chain(matching prefix: String) throws -> String {
        let matches = try chains().filter { $0.hasPrefix(prefix.lowercased()) }
        guard matches.count == 1 else {
            throw ArchiveError(.notFound, matches.isEmpty ? "no chain starts with \(prefix); list them with `hp-server chains`" : "\(prefix) matches \(matches.count) chains; give more characters")
        }
        return matches[0]
    }
}

/// Lines of a file, read in chunks (a bundle is never held whole).
struct FileLines: Sequence, IteratorProtocol {
    let handle: FileHandle
    var chunk: [UInt8] = []
    var index = 0
    var atEnd = false

    init(path: String) throws {
        guard let h = FileHandle(forReadingAtPath: path) else { throw ArchiveError(.notFound, "cannot read \(path)") }
        handle = h
    }

    mutating func next() -> [UInt8]? {
        var line: [UInt8] = []
        while true {
            if index >= chunk.count {
                if atEnd { return line.isEmpty ? nil : line }
                let data = (try? handle.read(upToCount: 1 << 20)) ?? nil
                guard let data, !data.isEmpty else { atEnd = true; continue }
                chunk = Array(data)
                index = 0
            }
            let b = chunk[index]
            index += 1
            if b == 0x0A { return line }
            line.append(b)
        }
    }
}
