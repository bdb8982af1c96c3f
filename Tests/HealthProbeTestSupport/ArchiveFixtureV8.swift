import Foundation
import GRDB
import HealthProbeArchive
import HealthProbeCanonical

/// `Tests/fixtures/archive-v8/`: a real schema-8 archive (an SQL dump) that the
/// schema-8 build wrote, with that build's answers about it (`expected.json`).
public enum ArchiveFixtureV8 {
    public static let directory = repositoryRoot.appendingPathComponent("Tests/fixtures/archive-v8")

    /// One observation's answers from the schema-8 build.
    public struct Observation: Sendable {
        public var id: Int64
        public var digest: String
        public var visibleCount: Int
        public var bundleManifestHash: String
        public var bundleItemCount: Int
    }

    /// `expected.json`'s observations, in order.
    public static func expected() throws -> [Observation] {
        let json = try JSONParser.parse(String(contentsOf: directory.appendingPathComponent("expected.json"), encoding: .utf8))
        guard case .object(let o) = json, case .array(let list)? = o["observations"] else { throw FixtureError("expected.json has no observations") }
        return try list.map { item in
            guard case .object(let e) = item, case .number(let id)? = e["observation_id"], case .string(let digest)? = e["chain_state_digest"],
                  case .number(let visible)? = e["visible_count"], case .string(let bundle)? = e["bundle_manifest_hash"],
                  case .number(let items)? = e["bundle_item_count"] else { throw FixtureError("an observation of expected.json lacks a field") }
            return Observation(id: Int64(id), digest: digest, visibleCount: Int(visible), bundleManifestHash: bundle, bundleItemCount: Int(items))
        }
    }

    /// Writes the schema-8 archive into `t`'s home (archive file from the dump, the
    /// fixture's keys), untouched by this build until something opens it.
    public static func install(into t: TempHome) throws {
        let fm = FileManager.default
        try fm.createDirectory(atPath: t.home.archiveDirectory, withIntermediateDirectories: true)
        let keys = t.root + "/keys"
        try fm.createDirectory(atPath: keys, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        for name in ["archive-secret", "device-chain-seed"] {
            try fm.copyItem(atPath: directory.appendingPathComponent("keys/\(name)").path, toPath: keys + "/" + name)
            try fm.setAttributes([.posixPermissions: 0o600], ofItemAtPath: keys + "/" + name)
        }
        try writeArchive(to: t.home.archivePath)
    }

    /// Writes the schema-8 archive file at `path` (from the dump; WAL mode, as archives are).
    public static func writeArchive(to path: String) throws {
        let dump = try String(contentsOf: directory.appendingPathComponent("archive.sql"), encoding: .utf8)
        ProcessSettings.apply()  // before this process's first connection, or the setting cannot apply
        let queue = try DatabaseQueue(path: path)
        try queue.writeWithoutTransaction { db in
            try db.execute(sql: dump)
            try db.execute(sql: "PRAGMA journal_mode = WAL")
        }
        try queue.close()
    }

    /// The device chain hash the fixture's archive holds.
    public static func chainHash() throws -> String {
        let dump = try String(contentsOf: directory.appendingPathComponent("archive.sql"), encoding: .utf8)
        guard let line = dump.split(separator: "\n").first(where: { $0.hasPrefix("INSERT INTO device_chains VALUES") }),
              let start = line.firstIndex(of: "'") else { throw FixtureError("archive.sql has no device chain") }
        return String(line[line.index(after: start)...].prefix(64))
    }

    /// The schema version the archive at `path` records.
    public static func schemaVersion(_ path: String) throws -> Int? {
        ProcessSettings.apply()
        return try DatabaseQueue(path: path).read { db in try Int.fetchOne(db, sql: "SELECT max(version) FROM schema_migrations") }
    }

    public struct FixtureError: Error, CustomStringConvertible {
        public let description: String
        init(_ d: String) { description = d }
    }
}
