import Foundation
import GRDB
import HealthProbeCanonical

/// The disposable report cache (cache-design.md), in its own SQLite file.
///
/// Everything but `app_settings` is derived from the archive and can be
/// deleted at any time. The archive is only read; when the two disagree
/// (another chain, an observation gone, changed status or aggregates) the
/// cache is rebuilt from the archive.
public final class ArchiveCache: Sendable {
    public let path: String
    let queue: DatabaseQueue

    /// What a refresh did.
    public enum Refresh: Sendable, Equatable {
        case upToDate
        case targeted(observations: Int)
        case full(reason: String)
    }

    /// Opens (creating if needed) the cache at `path`. A cache file that
    /// cannot be read is deleted and recreated: it holds nothing the archive lacks.
    public init(path: String) throws {
        self.path = path
        try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        var config = Configuration()
        config.busyMode = .timeout(10)
        do {
            queue = try Self.openQueue(path, config)
        } catch {
            for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
            queue = try Self.openQueue(path, config)
        }
    }

    private static func openQueue(_ path: String, _ config: Configuration) throws -> DatabaseQueue {
        let q = try DatabaseQueue(path: path, configuration: config)
        try q.write { db in
            try db.execute(sql: CacheSchema.settingsSQL)
            let version = try db.tableExists("cache_meta")
                ? Int.fetchOne(db, sql: "SELECT CAST(value AS INTEGER) FROM cache_meta WHERE key = 'cache_schema_version'") : nil
            if version != CacheSchema.version {
                for t in CacheSchema.rebuildableTables { try db.execute(sql: "DROP TABLE IF EXISTS \(t)") }
                try db.execute(sql: CacheSchema.sql)
                try db.execute(sql: "INSERT INTO cache_meta(key, value) VALUES ('cache_schema_version', ?)", arguments: [String(CacheSchema.version)])
            }
        }
        return q
    }

    /// The cache of a node home: `cache/HealthProbeCache.sqlite`.
    public static func of(_ home: ArchiveHome) throws -> ArchiveCache {
        try ArchiveCache(path: home.root + "/cache/HealthProbeCache.sqlite")
    }

    // MARK: Settings (survive rebuilds)

    public func setting(_ key: String) throws -> String? {
        try queue.read { db in try String.fetchOne(db, sql: "SELECT value FROM app_settings WHERE key = ?", arguments: [key]) }
    }

    public func setSetting(_ key: String, _ value: String, now: Double) throws {
        try queue.write { db in
            try db.execute(sql: "INSERT INTO app_settings(key, value, updated_at) VALUES (?, ?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at",
                           arguments: [key, value, now])
        }
    }

    // MARK: Refresh and rebuild

    /// Brings the cache in line with the archive: nothing when it agrees, the
    /// new or changed observations when that is enough, else a full rebuild.
    @discardableResult
    public func refresh(from node: NodeArchive) throws -> Refresh {
        let now = node.clock.now()
        let archiveState = try node.archive.writer.read { db in try ArchiveState.read(db, chainID: node.deviceChainID) }
        return try queue.write { db -> Refresh in
            let meta = Dictionary(uniqueKeysWithValues: try Row.fetchAll(db, sql: "SELECT key, value FROM cache_meta").map { ($0[0] as String, $0[1] as String) })
            var reason: String?
            if meta["device_chain_hash"] != node.deviceChainHash { reason = meta["device_chain_hash"] == nil ? "empty cache" : "another device chain" }
            else if meta["archive_schema_version"] != String(archiveState.schemaVersion) { reason = "archive schema version changed" }
            let cached = Dictionary(uniqueKeysWithValues: try Row.fetchAll(db, sql: "SELECT observation_id, status, source_aggregate_hash FROM cached_observation_rows")
                .map { ($0[0] as Int64, ($0[1] as String) + " " + ($0[2] as String)) })
            if reason == nil, cached.keys.contains(where: { archiveState.observations[$0] == nil }) { reason = "observations missing from the archive" }
            if let reason {
                try Self.clear(db)
                try Self.write(db, node: node, state: archiveState, ids: archiveState.observations.keys.sorted(), now: now)
                return .full(reason: reason)
            }
            let stale = archiveState.observations.filter { cached[$0.key] != $0.value.status + " " + $0.value.aggregateHash }.keys.sorted()
            if stale.isEmpty { return .upToDate }
            try Self.write(db, node: node, state: archiveState, ids: stale, now: now)
            return .targeted(observations: stale.count)
        }
    }

    /// Deletes every rebuildable row and recomputes them from the archive.
    public func rebuild(from node: NodeArchive) throws {
        let now = node.clock.now()
        let state = try node.archive.writer.read { db in try ArchiveState.read(db, chainID: node.deviceChainID) }
        try queue.write { db in
            try Self.clear(db)
            try Self.write(db, node: node, state: state, ids: state.observations.keys.sorted(), now: now)
        }
    }

    static func clear(_ db: Database) throws {
        for t in CacheSchema.rebuildableTables where t != "cache_meta" { try db.execute(sql: "DELETE FROM \(t)") }
        try db.execute(sql: "DELETE FROM cache_meta WHERE key != 'cache_schema_version'")
    }

    /// What the cache checks the archive against: each observation's status
    /// and a hash over its type summaries' aggregate hashes.
    struct ArchiveState {
        struct Obs { var status: String; var aggregateHash: String }
        var schemaVersion: Int
        var observations: [Int64: Obs]

        static func read(_ db: Database, chainID: Int64) throws -> ArchiveState {
            var obs: [Int64: Obs] = [:]
            for r in try Row.fetchAll(db, sql: """
                SELECT o.id, o.status,
                    (SELECT group_concat(h, ',') FROM (SELECT ifnull(aggregate_hash, '-') AS h FROM observation_type_summaries
                     WHERE observation_id = o.id ORDER BY sample_type_id)) AS hashes
                FROM observations o WHERE o.device_chain_id = ?
                """, arguments: [chainID]) {
                obs[r[0]] = Obs(status: r[1], aggregateHash: ArchiveHasher.sha256(.aggregate, "observation:" + ((r[2] as String?) ?? "")))
            }
            return ArchiveState(schemaVersion: try ArchiveMigrations.appliedVersion(db), observations: obs)
        }
    }

    /// (Re)writes the rows of `ids`, the latest observation's daily rows, the
    /// diff summaries ending at `ids`, export rows and archive health.
    static func write(_ db: Database, node: NodeArchive, state: ArchiveState, ids: [Int64], now: Double) throws {
        let av = state.schemaVersion, cv = CacheSchema.version
        let latest = state.observations.keys.max()
        try node.archive.writer.read { adb in
            let names = Dictionary(uniqueKeysWithValues: try Row.fetchAll(adb, sql: "SELECT type_identifier, display_name FROM sample_types").map { ($0[0] as String, $0[1] as String?) })
            for id in ids {
                guard let o = state.observations[id] else { continue }
                try db.execute(sql: "DELETE FROM cached_observation_rows WHERE observation_id = ?", arguments: [id])
                try db.execute(sql: "DELETE FROM cached_type_summaries WHERE observation_id = ?", arguments: [id])
                try db.execute(sql: "DELETE FROM cached_diff_summaries WHERE to_observation_id = ?", arguments: [id])
                let row = try ObservationQueries.list(adb, chainID: node.deviceChainID, afterID: id - 1, limit: 1).first { $0.id == id }
                guard let row else { continue }
                let summaries = try AggregateQueries.summaries(adb, at: id)
                let visible = summaries.reduce(0) { $0 + $1.visibleRecordCount }
                try db.execute(sql: """
                    INSERT INTO cached_observation_rows VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """, arguments: [id, row.observedAt, row.status, row.triggerReason, row.timeZoneIdentifier, row.typeRuns, visible,
                                     row.appeared, row.disappeared, row.changed, row.deletedObjects, av, cv, o.aggregateHash, now])
                for s in summaries {
                    try db.execute(sql: "INSERT INTO cached_type_summaries VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                                   arguments: [id, s.typeIdentifier, names[s.typeIdentifier] ?? nil, s.visibleRecordCount,
                                               s.observationID == id ? s.appearedCount : 0, s.observationID == id ? s.disappearedCount : 0,
                                               s.observationID == id ? s.representationChangedCount : 0, s.earliestStartDate, s.latestEndDate,
                                               s.valueSum, s.valueMax, s.aggregateHash, av, cv, now])
                }
                // The adjacent diff summary (previous observation of the chain to this one).
                if let prev = state.observations.keys.filter({ $0 < id }).max() {
                    let report = try ChangeClassifier.classify(adb, diff: ObservationDiff.prepare(adb, from: prev, to: id))
                    for t in report.types {
                        try db.execute(sql: "INSERT INTO cached_diff_summaries VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                                       arguments: [prev, id, t.typeIdentifier, t.appeared.count, t.disappeared.count, t.changed,
                                                   t.labels.map(\.rawValue).joined(separator: ","), t.labels.contains(.consolidationLikely),
                                                   t.uncertainty.first, o.aggregateHash, av, cv, now])
                    }
                }
            }
            // Daily rows of the latest observation (what `hp-node summary` shows).
            if let latest, ids.contains(latest) {
                try db.execute(sql: "DELETE FROM cached_daily_aggregates")
                let zone = try String.fetchOne(adb, sql: "SELECT time_zone_identifier FROM observations WHERE id = ?", arguments: [latest])
                for s in try AggregateQueries.summaries(adb, at: latest) {
                    for d in try AggregateQueries.daily(adb, at: latest, typeIdentifier: s.typeIdentifier) {
                        let rev = d.sourceRevision.map { ArchiveHasher.sha256(.aggregate, "revision:" + $0) } ?? "-"
                        try db.execute(sql: """
                            INSERT INTO cached_daily_aggregates VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                            ON CONFLICT DO UPDATE SET visible_record_count = visible_record_count + excluded.visible_record_count
                            """, arguments: [latest, s.typeIdentifier, d.bucketStart, d.bucketEnd, zone, d.visibleRecordCount, d.valueSum,
                                             d.valueMax, rev, d.aggregateHash, av, cv, now])
                    }
                }
            }
            try db.execute(sql: "DELETE FROM cached_export_manifests")
            for e in try Row.fetchAll(adb, sql: "SELECT * FROM export_manifests ORDER BY id") {
                try db.execute(sql: "INSERT INTO cached_export_manifests VALUES (?, ?, ?, ?, ?, ?, ?, ?, NULL, 'completed', ?, ?, ?)",
                               arguments: [e["export_id"] as String, e["export_kind"] as String, e["created_at"] as Double, e["from_observation_id"] as Int64?,
                                           e["to_observation_id"] as Int64?, e["filter_json"] as String?, e["record_count"] as Int?, e["manifest_hash"] as String?, av, cv, now])
            }
            let status = try ObservationQueries.status(adb, chainID: node.deviceChainID)
            let statusJSON = String(decoding: try JSONEncoder().encode(status), as: UTF8.self)
            let buildID = UUID().uuidString.lowercased()
            try db.execute(sql: """
                INSERT INTO cached_archive_health(id, archive_schema_version, cache_schema_version, cache_build_id, status_json, computed_at)
                VALUES (1, ?, ?, ?, ?, ?)
                ON CONFLICT(id) DO UPDATE SET archive_schema_version = excluded.archive_schema_version, cache_build_id = excluded.cache_build_id,
                    status_json = excluded.status_json, computed_at = excluded.computed_at
                """, arguments: [av, cv, buildID, statusJSON, now])
        }
        for (k, v) in [("device_chain_hash", node.deviceChainHash), ("archive_schema_version", String(av)), ("built_at", CanonicalDate.string(now))] {
            try db.execute(sql: "INSERT INTO cache_meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value", arguments: [k, v])
        }
    }

    // MARK: Reads

    /// Cached observation rows, by id, after `afterID`.
    public func observations(afterID: Int64 = 0, limit: Int = 200) throws -> [CachedObservation] {
        try queue.read { db in
            try Row.fetchAll(db, sql: "SELECT * FROM cached_observation_rows WHERE observation_id > ? ORDER BY observation_id LIMIT ?", arguments: [afterID, limit]).map {
                CachedObservation(id: $0["observation_id"], observedAt: $0["observed_at"], status: $0["status"], triggerReason: $0["trigger_reason"],
                                  timeZoneIdentifier: $0["time_zone_identifier"], trackedTypeCount: $0["tracked_type_count"],
                                  visibleRecordCount: $0["visible_record_count"], appeared: $0["appeared_count"], disappeared: $0["disappeared_count"],
                                  changed: $0["representation_changed_count"], deletedObjects: $0["deleted_object_count"])
            }
        }
    }

    /// The cached archive status.
    public func status() throws -> ObservationQueries.Status? {
        try queue.read { db in
            guard let json = try String.fetchOne(db, sql: "SELECT status_json FROM cached_archive_health WHERE id = 1") else { return nil }
            return try JSONDecoder().decode(ObservationQueries.Status.self, from: Data(json.utf8))
        }
    }

    /// Row counts per cache table (for `hp-node cache status`).
    public func counts() throws -> [String: Int] {
        try queue.read { db in
            var out: [String: Int] = [:]
            for t in CacheSchema.rebuildableTables + ["app_settings"] { out[t] = try Int.fetchOne(db, sql: "SELECT count(*) FROM \(t)") ?? 0 }
            return out
        }
    }

    /// Direct access for tests (`@testable`); product code uses named methods.
    func write<T>(_ body: (Database) throws -> T) throws -> T { try queue.write(body) }
    func read<T>(_ body: (Database) throws -> T) throws -> T { try queue.read(body) }
}

/// One observation row of the cache.
public struct CachedObservation: Sendable, Codable, Equatable {
    public var id: Int64
    public var observedAt: Double
    public var status: String
    public var triggerReason: String
    public var timeZoneIdentifier: String?
    public var trackedTypeCount: Int
    public var visibleRecordCount: Int
    public var appeared: Int
    public var disappeared: Int
    public var changed: Int
    public var deletedObjects: Int
}
