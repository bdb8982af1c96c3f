import Foundation
import GRDB
import HealthProbeCanonical

/// One integrity check's outcome.
public struct IntegrityCheck: Sendable, Codable, Equatable {
    /// `notice`: something an administrator should read that is not damage (it does not fail verification).
    public enum Status: String, Sendable, Codable { case ok, problem, skipped, notice }
    public var name: String
    public var status: Status
    /// What was checked, or what is wrong and where.
    public var detail: String

    public init(name: String, status: Status, detail: String) {
        self.name = name
        self.status = status
        self.detail = detail
    }

    /// `ok` with `okDetail` when `problems` is empty; otherwise a problem naming the
    /// first five and how many more there are.
    public init(name: String, problems: [String], ok okDetail: String) {
        self = problems.isEmpty ? IntegrityCheck(name: name, status: .ok, detail: okDetail)
            : IntegrityCheck(name: name, status: .problem, detail: problems.prefix(5).joined(separator: "; ")
                             + (problems.count > 5 ? "; and \(problems.count - 5) more" : ""))
    }
}

/// The result of `hp-node verify`.
public struct IntegrityReport: Sendable, Codable, Equatable {
    public var mode: String
    public var checks: [IntegrityCheck]
    public var ok: Bool { !checks.contains { $0.status == .problem } }
}

/// Archive integrity checks (database-design.md 14). `quick` runs SQLite's
/// quick check, the schema, foreign keys, open-range sanity, duplicate
/// identities and the latest observation's aggregates (summaries and daily
/// rows); `full` adds the full integrity check, the rebuild of every
/// visibility range from events, every aggregate, the re-verification of
/// recorded export manifests, and every sent bundle built again.
public enum ArchiveVerifier {
    public enum Mode: String, Sendable { case quick, full }

    public static func run(_ node: NodeArchive, mode: Mode) throws -> IntegrityReport {
        var checks = try databaseChecks(node.archive, mode: mode)
        // Recorded export manifests.
        if mode == .full {
            checks.append(try exports(node))
            checks.append(try sentBundles(node))
        } else {
            checks.append(IntegrityCheck(name: "export_manifests", status: .skipped, detail: "run with --full"))
            checks.append(IntegrityCheck(name: "sent_bundles", status: .skipped, detail: "run with --full"))
        }
        return IntegrityReport(mode: mode.rawValue, checks: checks)
    }

    /// The checks that need only the database (a node's archive or a server's replica).
    public static func databaseChecks(_ archive: Archive, mode: Mode) throws -> [IntegrityCheck] {
        var checks: [IntegrityCheck] = []
        func add(_ name: String, _ problems: [String], ok: String) {
            checks.append(IntegrityCheck(name: name, problems: problems, ok: ok))
        }
        try archive.writer.read { db in
            // A first load in progress (or one a crash ended) has dropped the lookup indexes.
            if try DeferredIndexes.pendingRecord(db) != nil {
                throw ArchiveError(.invalidState, "a first capture or import has not yet built the archive's lookup indexes; open the archive for writing (any hp-node command does) to build them, then verify")
            }
            // 1. SQLite's own check.
            let pragma = mode == .full ? "integrity_check" : "quick_check"
            let lines = try String.fetchAll(db, sql: "PRAGMA \(pragma)")
            add("sqlite_\(pragma)", lines == ["ok"] ? [] : lines, ok: "PRAGMA \(pragma): ok")

            // 2. Schema version.
            var schema: [String] = []
            let applied = try Int.fetchAll(db, sql: "SELECT version FROM schema_migrations ORDER BY version")
            let known = ArchiveMigrations.all.map(\.version)
            if applied != known { schema.append("schema_migrations has \(applied), this build expects \(known)") }
            let recorded = try String.fetchOne(db, sql: "SELECT value FROM archive_metadata WHERE key = 'schema_version'")
            if recorded != String(ArchiveMigrations.latestVersion) {
                schema.append("archive_metadata.schema_version is \(recorded ?? "missing"), expected \(ArchiveMigrations.latestVersion)")
            }
            add("schema_version", schema, ok: "version \(ArchiveMigrations.latestVersion), migrations \(known.map(String.init).joined(separator: ","))")

            // 3. Foreign keys.
            let fk = try Row.fetchAll(db, sql: "PRAGMA foreign_key_check").prefix(50).map { r in
                "\(r[0] as String) row \((r[1] as Int64?).map(String.init) ?? "?") refers to a missing \(r[2] as String) row"
            }
            add("foreign_keys", Array(fk), ok: "no dangling references")

            // 4. Open-range sanity.
            var ranges: [String] = []
            for r in try Row.fetchAll(db, sql: """
                SELECT sample_id, count(*) FROM sample_visibility_ranges WHERE last_observation_id IS NULL
                GROUP BY sample_id HAVING count(*) > 1 LIMIT 20
                """) { ranges.append("sample \(r[0] as Int64) has \(r[1] as Int) open ranges") }
            for r in try Row.fetchAll(db, sql: """
                SELECT sample_id, first_observation_id, last_observation_id FROM sample_visibility_ranges
                WHERE last_observation_id IS NOT NULL AND last_observation_id <= first_observation_id LIMIT 20
                """) { ranges.append("sample \(r[0] as Int64): range closes at \(r[2] as Int64) but opened at \(r[1] as Int64)") }
            for r in try Row.fetchAll(db, sql: """
                SELECT r.sample_id, r.version_id FROM sample_visibility_ranges r JOIN sample_versions v ON v.id = r.version_id
                WHERE v.sample_id != r.sample_id LIMIT 20
                """) { ranges.append("sample \(r[0] as Int64): range names version \(r[1] as Int64) of another sample") }
            for r in try Row.fetchAll(db, sql: """
                SELECT r.sample_id FROM sample_visibility_ranges r
                WHERE r.first_observation_id > (SELECT max(id) FROM observations) LIMIT 20
                """) { ranges.append("sample \(r[0] as Int64): range opens after the last observation") }
            add("open_ranges", ranges, ok: "at most one open range per sample; ranges well ordered")

            // 5. Duplicate identities.
            var dup: [String] = []
            // One walk of the UUID index finds the UUIDs held more than once; only their rows
            // are grouped by type (a GROUP BY over every sample sorted them all: 1.1 s at 1M).
            for r in try Row.fetchAll(db, sql: """
                SELECT s.sample_type_id, lower(hex(s.sample_uuid_hash)), count(*)
                FROM (\(ObservationChecks.uuidsHeldMoreThanOnce)) d
                CROSS JOIN samples s INDEXED BY \(SampleIndexes.byUUID) ON s.sample_uuid_hash = d.u
                GROUP BY s.sample_type_id, s.sample_uuid_hash HAVING count(*) > 1 LIMIT 20
                """) { dup.append("type \(r[0] as Int64): UUID hash \((r[1] as String).prefix(16))... has \(r[2] as Int) sample rows") }
            add("duplicate_identities", dup, ok: "every UUID-identified sample has one identity")

            // 6. Visibility ranges rebuilt from events (full).
            if mode == .full {
                // Every sample, both sides walked in sample order (`RangeRebuild`): nothing
                // sorted or held but one sample's rows.
                let diff = try RangeRebuild.compare(db, events: FastStatement(db, RangeRebuild.allEvents),
                                                    stored: FastStatement(db, RangeRebuild.allRanges), arguments: [], limit: 20).ranges
                add("ranges_from_events", diff, ok: "every range equals its rebuild from events")
            } else {
                checks.append(IntegrityCheck(name: "ranges_from_events", status: .skipped, detail: "run with --full"))
            }

            // 6b. Every sample and version lies above its observation's row bounds, which the
            //     bundle builder and a revert read from (migration 12) (full: a pass over both tables).
            if mode == .full {
                var bounds: [String] = []
                for (table, column, bound) in [("samples", "first_seen_observation_id", "samples_before"), ("sample_versions", "created_observation_id", "versions_before")] {
                    for r in try Row.fetchAll(db, sql: """
                        SELECT x.id, x.\(column) FROM \(table) x JOIN observations o ON o.id = x.\(column)
                        WHERE x.id <= ifnull(o.\(bound), 0) LIMIT 20
                        """) { bounds.append("\(table) row \(r[0] as Int64) is at or below observation \(r[1] as Int64)'s \(bound)") }
                }
                add("row_bounds", bounds, ok: "every sample and version lies above its observation's row bounds")
            } else {
                checks.append(IntegrityCheck(name: "row_bounds", status: .skipped, detail: "run with --full"))
            }

            // 7. Each type run's verified visible count against its type's summary (which
            //    check 8 recomputes from ranges): a completed full scan counts what it saw.
            var counts: [String] = []
            for r in try Row.fetchAll(db, sql: """
                SELECT t.observation_id, st.type_identifier, t.verified_visible_count, ts.visible_record_count
                FROM observation_type_runs t
                JOIN sample_types st ON st.id = t.sample_type_id
                LEFT JOIN observation_type_summaries ts ON ts.observation_id = t.observation_id AND ts.sample_type_id = t.sample_type_id
                WHERE t.verified_visible_count IS NOT NULL AND ts.visible_record_count IS NOT t.verified_visible_count
                ORDER BY t.observation_id LIMIT 20
                """) {
                counts.append("observation \(r[0] as Int64) \(r[1] as String): the run verified \(r[2] as Int) visible records, the summary has \((r[3] as Int?).map(String.init) ?? "none")")
            }
            add("visible_counts", counts, ok: "every type run's verified visible count equals its summary's")

            // 8. Aggregates recomputed from ranges: summaries, then the daily rows they use.
            let aggregates = try AggregateVerifier.check(db, mode: mode)
            let scope = mode == .quick ? " (latest observation)" : ""
            add("aggregates", aggregates.summaryProblems,
                ok: "\(aggregates.summaries) type summaries match the ranges and their hashes" + scope)
            add("daily_aggregates", aggregates.dailyProblems,
                ok: "\(aggregates.dailyRows) daily rows of \(aggregates.dailyBases) type runs match the ranges per local day, hashes included" + scope)
        }
        return checks
    }

    /// Builds every bundle this node recorded as sent again, linked to the previous
    /// manifest hash it was sent with, and compares the manifest hash: a bundle must
    /// be the same bytes whenever it is built (Protocol/bundles.md section 4), or the
    /// node would see a divergence the next time it rebuilds one after a lost
    /// acknowledgement. Streams each bundle; nothing is kept.
    static func sentBundles(_ node: NodeArchive) throws -> IntegrityCheck {
        let chain = node.deviceChainID
        return try node.archive.writer.read { db in
            let rows = try Row.fetchAll(db, sql: """
                SELECT sequence, observation_id, manifest_hash, previous_manifest_hash FROM bundle_log
                WHERE device_chain_id = ? AND direction = 'sent' ORDER BY sequence
                """, arguments: [chain])
            var problems: [String] = []
            for r in rows {
                let sequence: Int = r["sequence"], recorded: String = r["manifest_hash"]
                guard let obs: Int64 = r["observation_id"] else { problems.append("bundle \(sequence): no observation recorded"); continue }
                do {
                    let again = try ObservationBundleBuilder.build(db, observationID: obs, previousManifestHash: r["previous_manifest_hash"]) { _, _, _ in }.2
                    if again != recorded {
                        problems.append("bundle \(sequence) (observation \(obs)) builds to \(again.prefix(16))... but was sent as \(recorded.prefix(16))...")
                    }
                } catch {
                    problems.append("bundle \(sequence) (observation \(obs)) cannot be built again (\(error))")
                }
            }
            return IntegrityCheck(name: "sent_bundles", problems: problems, ok: "\(rows.count) sent bundles build to the manifest hashes they were sent with")
        }
    }

    /// Reproduces every completed export (as of its recorded observation) and
    /// compares the manifest hash; checks the file too when it is still there.
    static func exports(_ node: NodeArchive) throws -> IntegrityCheck {
        let rows = try node.archive.writer.read { db in
            try Row.fetchAll(db, sql: "SELECT * FROM export_manifests WHERE status = 'completed' ORDER BY id")
        }
        var problems: [String] = []
        let dir = NSTemporaryDirectory() + "hp-verify-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        for r in rows {
            let id: String = r["export_id"], recorded: String = r["manifest_hash"]
            guard let kind = ExportKind(rawValue: r["export_kind"]) else { problems.append("export \(id): unknown kind"); continue }
            var request = ExportRequest(kind: kind)
            request.asOf = r["as_of_observation_id"]
            if kind == .observationDiffJSON { request.from = r["from_observation_id"]; request.to = r["to_observation_id"] }
            else if kind != .archiveManifestJSON { request.at = r["from_observation_id"] }
            if let f: String = r["filter_json"], case .object(let o)? = try? JSONParser.parse(f) {
                if case .array(let t)? = o["sample_type_identifiers"] { request.types = t.compactMap { if case .string(let s) = $0 { return s }; return nil } }
                if case .object(let range)? = o["date_range"] {
                    if case .string(let s)? = range["start"] { request.dateFrom = CanonicalDate.parse(s) }
                    if case .string(let s)? = range["end"] { request.dateTo = CanonicalDate.parse(s) }
                }
                if case .bool(let b)? = o["include_relationships"] { request.includeRelationships = b }
                if case .bool(let b)? = o["include_metadata"] { request.includeMetadata = b }
            }
            do {
                // Made again as the schema it was made under named itself (an export's header names it).
                var again = try Exporter.reproduce(node: node, request: request, scratch: dir + "/x", parallel: true,
                                                   schemaVersion: r["schema_version"])
                // An export made before format 2 is made again in format 1 (the manifest hash
                // names the format, so only a format-1 export can match it).
                if again != recorded {
                    request.formatVersion = 1
                    again = try Exporter.reproduce(node: node, request: request, scratch: dir + "/x", parallel: true, schemaVersion: r["schema_version"])
                }
                if again != recorded { problems.append("export \(id) (\(kind.rawValue)): reproduced manifest \(again.prefix(16))... differs from recorded \(recorded.prefix(16))...") }
            } catch {
                problems.append("export \(id): cannot be reproduced (\(error))")
            }
            if let path: String = r["file_path"], FileManager.default.fileExists(atPath: path) {
                let v = try ExportVerifier.verify(path: path)
                if !v.ok { problems.append("export \(id): file \(path): \(v.problems.first ?? "")") }
                else if v.manifestHash != recorded { problems.append("export \(id): file \(path) has manifest \(v.manifestHash ?? "-"), recorded \(recorded)") }
            }
        }
        return IntegrityCheck(name: "export_manifests", problems: problems, ok: "\(rows.count) completed export(s) reproduce their manifest hashes")
    }
}
