import Foundation
import GRDB
import HealthProbeCanonical

/// Column layouts of the CSV exports (export-spec.md 6).
public enum CSVColumns {
    /// The spec's 23 columns, in its order: all of format version 1, the first 23 of version 2.
    public static let records = [
        "export_id", "observation_id", "sample_type_identifier", "sample_identity_hash", "sample_uuid_hash", "strict_fingerprint",
        "semantic_fingerprint", "payload_hash", "start_date_utc", "end_date_utc", "value_kind", "numeric_value", "unit", "category_value",
        "workout_activity_type", "duration_seconds", "source_hash", "device_hash", "metadata_hash", "first_seen_observation_id",
        "last_verified_observation_id", "disappeared_observation_id", "item_hash",
    ]
    /// Format version 2's columns after the spec's 23: the type's display name and unit
    /// (`TypeCatalogue`), the start's local day, the sample's lateness.
    public static let human = ["display_name", "display_unit", "local_day", "lateness_seconds"]
    /// Format version 2's record columns.
    public static let recordsV2 = records + human
    /// Columns holding numbers (the rest are text); empty cells are null.
    public static let numeric: Set<String> = [
        "observation_id", "numeric_value", "category_value", "workout_activity_type", "duration_seconds",
        "first_seen_observation_id", "last_verified_observation_id", "disappeared_observation_id", "lateness_seconds",
    ]
    public static let relationships = [
        "export_id", "relationship_kind", "observation_id", "source_type_identifier", "source_identity_hash",
        "target_type_identifier", "target_identity_hash", "metadata_hash", "item_hash",
    ]

    /// The record columns of export format `version`, nil for a version this build does not know.
    public static func records(version: Int) -> [String]? {
        switch version { case 1: records; case 2: recordsV2; default: nil }
    }

    /// A record layout's item hash input: every column but `export_id` and `item_hash`,
    /// by name, in canonical key order.
    struct Layout {
        let columns: [String]
        let numeric: [Bool]
        /// Indexes of the hashed columns in canonical key order, and their `"name":` bytes.
        let hashOrder: [Int]
        let quotedNames: [[UInt8]]
        /// Where the `item_hash` column is.
        let itemHashIndex: Int

        init(_ columns: [String]) {
            self.columns = columns
            numeric = columns.map { CSVColumns.numeric.contains($0) }
            hashOrder = columns.indices.filter { columns[$0] != "export_id" && columns[$0] != "item_hash" }
                .sorted { CanonicalJSON.keyPrecedes(columns[$0], columns[$1]) }
            quotedNames = columns.map { Array("\"\($0)\":".utf8) }
            itemHashIndex = columns.firstIndex(of: "item_hash")!
        }

        static let v1 = Layout(CSVColumns.records)
        static let v2 = Layout(CSVColumns.recordsV2)
    }

    /// The item hash of a CSV record row: SHA-256 of `hp:v2:export_item:` and
    /// the canonical JSON object of its columns but `export_id` and `item_hash` by
    /// name (columns 2-22; in version 2 also 24-27), from the row's `cells`: empty is
    /// null, a numeric column a number, others strings. A numeric cell that is not a
    /// number is hashed as a string and named to `notANumber` (its column index). `w`
    /// is scratch space.
    static func recordHash(cells: [String], layout: Layout, scratch w: inout CanonicalJSONWriter,
                           notANumber: (Int) -> Void) throws -> String {
        w.reset()
        w.appendRaw(UInt8(ascii: "{"))
        for (n, column) in layout.hashOrder.enumerated() {
            if n > 0 { w.appendRaw(UInt8(ascii: ",")) }
            w.appendRaw(layout.quotedNames[column])
            let cell = cells[column]
            if cell.isEmpty {
                w.writeNull()
            } else if layout.numeric[column] {
                if let d = Double(cell), d.isFinite { try w.writeNumber(d) } else { notANumber(column); w.writeString(cell) }
            } else {
                w.writeString(cell)
            }
        }
        w.appendRaw(UInt8(ascii: "}"))
        return w.withBytes { ArchiveHasher.sha256(.exportItem, buffer: UnsafeRawBufferPointer($0)) }
    }
}

/// Streams an export from SQLite to a file: items in the spec's order, item
/// hashes and the manifest hash computed as rows go by, the file renamed into
/// place and the manifest row marked `completed` only at the end.
public enum Exporter {
    /// What a cancelled export throws, wherever it notices.
    static var cancelled: ArchiveError {
        ArchiveError(.cancelled, "the export was cancelled; no file was left and no completed manifest was recorded")
    }

    /// Runs an export. `isCancelled` is polled between items; a cancelled export
    /// throws `ArchiveError(.cancelled)` and leaves no file behind.
    public static func run(node: NodeArchive, request: ExportRequest, out: String, overwrite: Bool = false,
                           exportID: String = UUID().uuidString.lowercased(),
                           isCancelled: @escaping @Sendable () -> Bool = { false },
                           progress: (Int) -> Void = { _ in }) throws -> ExportResult {
        let now = node.clock.now()
        let chain = node.deviceChainID
        // Resolve the scope.
        let scope = try node.archive.writer.read { db in try Scope.resolve(db, request: request, chainID: chain) }
        let envelope = ExportEnvelope(exportID: exportID, kind: request.kind, createdAt: now,
                                      app: .object(["name": .string("HealthProbe"), "version": .string(HealthProbeVersion.current)]),
                                      archive: scope.archiveJSON(chainHash: node.deviceChainHash), filters: scope.filters, version: request.formatVersion)
        let rowID = try node.archive.writer.write { db -> Int64 in
            if try Bool.fetchOne(db, sql: "SELECT 1 FROM export_manifests WHERE export_id = ?", arguments: [exportID]) != nil {
                throw ArchiveError(.invalidInput, "an export with id \(exportID) is already recorded; export ids are unique")
            }
            try db.execute(sql: """
                INSERT INTO export_manifests(export_id, created_at, export_kind, from_observation_id, to_observation_id, filter_json,
                    manifest_hash, record_count, status, file_path, as_of_observation_id, schema_version)
                VALUES (?, ?, ?, ?, ?, ?, '', 0, 'running', ?, ?, ?)
                """, arguments: [exportID, now, request.kind.rawValue, scope.from, scope.to,
                                 String(decoding: try CanonicalJSON.encode(scope.filters), as: UTF8.self), out, scope.asOf, scope.schemaVersion])
            return db.lastInsertedRowID
        }
        var outputs: [ExportOutput] = []
        do {
            let result = try readForExport(node) { db, helper in
                try write(db, request: request, scope: scope, envelope: envelope, out: out, overwrite: overwrite,
                          outputs: &outputs, helper: helper, isCancelled: isCancelled, progress: progress)
            }
            for o in outputs { try o.commit() }
            try node.archive.writer.write { db in
                try db.execute(sql: "UPDATE export_manifests SET status = 'completed', manifest_hash = ?, record_count = ?, ended_at = ? WHERE id = ?",
                               arguments: [result.manifestHash, result.recordCount, node.clock.now(), rowID])
            }
            return result
        } catch {
            for o in outputs { o.abandon() }
            let status = (error as? ArchiveError)?.code == .cancelled ? "cancelled" : "failed"
            try? node.archive.writer.write { db in
                try db.execute(sql: "UPDATE export_manifests SET status = ?, ended_at = ? WHERE id = ?", arguments: [status, node.clock.now(), rowID])
            }
            throw error
        }
    }

    /// The manifest hash an export of `request` has now, written to a scratch
    /// file that is deleted (nothing is recorded in the archive).
    public static func reproduce(node: NodeArchive, request: ExportRequest, scratch: String) throws -> String {
        try reproduce(node: node, request: request, scratch: scratch, parallel: true)
    }

    /// `parallel: false` reads records on one connection only; `batchSize`
    /// records per batch (tests compare these); `schemaVersion`: the schema version the
    /// export's header named when it was made (`export_manifests.schema_version`), when it
    /// differs from the archive's now. The format is `request.formatVersion`'s.
    static func reproduce(node: NodeArchive, request: ExportRequest, scratch: String, parallel: Bool,
                          batchSize: Int = RecordSink.batchSize, schemaVersion: Int? = nil) throws -> String {
        var scope = try node.archive.writer.read { db in try Scope.resolve(db, request: request, chainID: node.deviceChainID) }
        if let schemaVersion { scope.schemaVersion = schemaVersion }
        let envelope = ExportEnvelope(exportID: "reproduction", kind: request.kind, createdAt: 0,
                                      app: .object(["name": .string("HealthProbe"), "version": .string(HealthProbeVersion.current)]),
                                      archive: scope.archiveJSON(chainHash: node.deviceChainHash), filters: scope.filters, version: request.formatVersion)
        var outputs: [ExportOutput] = []
        defer { for o in outputs { o.abandon() } }
        let result = try readForExport(node, parallel: parallel) { db, helper in
            try write(db, request: request, scope: scope, envelope: envelope, out: scratch, overwrite: true, outputs: &outputs,
                      helper: helper, batchSize: batchSize, isCancelled: { false }, progress: { _ in })
        }
        return result.manifestHash
    }

    /// An export of an archive that is not this process's own node archive (a server's
    /// replica of a device chain): written to `out` (committed atomically), recorded
    /// nowhere, so the replica stays exactly what its bundles made it. The same bytes
    /// and manifest hash as the device's own export of the same request, `exportID` and
    /// `createdAt`.
    public static func writeUnrecorded(archive: Archive, chainHash: String, request: ExportRequest, out: String,
                                       exportID: String, createdAt: Double) throws -> ExportResult {
        try writeUnrecorded(archive: archive, chainHash: chainHash, request: request, out: out, exportID: exportID, createdAt: createdAt, schemaVersion: nil)
    }

    /// `schemaVersion`: the schema version the export's `archive` object names instead of
    /// the archive's own (tests make again an export an older schema's build wrote).
    static func writeUnrecorded(archive: Archive, chainHash: String, request: ExportRequest, out: String,
                                exportID: String, createdAt: Double, schemaVersion: Int?) throws -> ExportResult {
        let chainID = try archive.writer.read { db in
            try Int64.fetchOne(db, sql: "SELECT id FROM device_chains WHERE device_chain_hash = ?", arguments: [chainHash])
        }
        guard let chainID else { throw ArchiveError(.notFound, "chain \(chainHash.prefix(16)) is not in this archive") }
        var scope = try archive.writer.read { db in try Scope.resolve(db, request: request, chainID: chainID) }
        if let schemaVersion { scope.schemaVersion = schemaVersion }
        let envelope = ExportEnvelope(exportID: exportID, kind: request.kind, createdAt: createdAt,
                                      app: .object(["name": .string("HealthProbe"), "version": .string(HealthProbeVersion.current)]),
                                      archive: scope.archiveJSON(chainHash: chainHash), filters: scope.filters, version: request.formatVersion)
        var outputs: [ExportOutput] = []
        do {
            let result = try readForExport(archive) { db, helper in
                try write(db, request: request, scope: scope, envelope: envelope, out: out, overwrite: true, outputs: &outputs,
                          helper: helper, isCancelled: { false }, progress: { _ in })
            }
            for o in outputs { try o.commit() }
            return result
        } catch {
            for o in outputs { o.abandon() }
            throw error
        }
    }

    static func readForExport<T>(_ node: NodeArchive, parallel: Bool = true, _ body: (Database, ExportHelper?) throws -> T) throws -> T {
        try readForExport(node.archive, parallel: parallel, body)
    }

    /// Runs `body` on a reader of the archive, with a second reader of the same
    /// snapshot lent through the helper (none when `parallel` is false); the
    /// helper is let go as soon as `body` returns.
    static func readForExport<T>(_ archive: Archive, parallel: Bool = true, _ body: (Database, ExportHelper?) throws -> T) throws -> T {
        let helper = ExportHelper()
        return try archive.writer.readWithHelper({ db in
            defer { helper.close() }
            return try body(db, parallel ? helper : nil)
        }, helper: helper.serve)
    }

    /// The observations an export covers, resolved and checked.
    struct Scope {
        var at: Int64?
        var from: Int64?
        var to: Int64?
        var asOf: Int64
        var filters: JSONValue
        var zone: JSONValue
        /// The exported observation's capture windows (`CaptureWindows.exportJSON`), null when none.
        var capture: JSONValue = .null
        var formatVersion = ExportEnvelope.formatVersion
        var schemaVersion: Int

        static func resolve(_ db: Database, request r: ExportRequest, chainID: Int64) throws -> Scope {
            guard let latest = try ObservationQueries.latestObservationID(db, chainID: chainID) else {
                throw ArchiveError(.notFound, "the archive has no observations to export yet")
            }
            func check(_ id: Int64?, _ what: String) throws {
                guard let id else { return }
                guard try Int64.fetchOne(db, sql: "SELECT device_chain_id FROM observations WHERE id = ?", arguments: [id]) == chainID else {
                    throw ArchiveError(.notFound, "\(what) \(id) is not an observation of this archive's chain; list them with `hp-node observations`")
                }
            }
            let asOf = r.asOf ?? latest
            try check(r.asOf, "--as-of")
            var s = Scope(asOf: asOf, filters: .null, zone: .null, schemaVersion: try ArchiveMigrations.appliedVersion(db))
            s.formatVersion = r.formatVersion
            switch r.kind {
            case .observationDiffJSON:
                // Unnamed, `to` is the latest observation (at `asOf`) and `from` the one before `to`:
                // the latest change (the dashboard's API; the CLI names both).
                let t = r.to ?? min(latest, asOf)
                try check(t, "--to")
                guard let f = try r.from ?? ObservationQueries.previousObservationID(db, chainID: chainID, before: t) else {
                    throw ArchiveError(.notFound, "observation \(t) is the chain's first: there is no earlier one to compare it with")
                }
                try check(f, "--from")
                s.from = f; s.to = t
            case .archiveManifestJSON:
                s.from = try Int64.fetchOne(db, sql: "SELECT min(id) FROM observations WHERE device_chain_id = ?", arguments: [chainID])
                s.to = asOf
            default:
                let at = r.at ?? min(latest, asOf)
                try check(at, "--at")
                if at > asOf { throw ArchiveError(.invalidInput, "--at \(at) is after --as-of \(asOf)") }
                s.at = at; s.from = at
            }
            if let obs = s.at ?? s.to, let z = try Row.fetchOne(db, sql: "SELECT time_zone_identifier, time_zone_seconds_from_gmt FROM observations WHERE id = ?", arguments: [obs]) {
                s.zone = .object(["identifier": .optional(z[0] as String?), "seconds_from_gmt": .optional((z[1] as Int?))])
                if r.formatVersion >= 2 { s.capture = try CaptureWindows.exportJSON(db, observationID: obs) }
            }
            let range: JSONValue = (r.dateFrom == nil && r.dateTo == nil) ? .null
                : .object(["start": r.dateFrom.map { .string(CanonicalDate.string($0)) } ?? .null, "end": r.dateTo.map { .string(CanonicalDate.string($0)) } ?? .null])
            s.filters = .object([
                "sample_type_identifiers": .array(Array(Set(r.types)).sorted(by: CanonicalJSON.keyPrecedes).map(JSONValue.string)),
                "date_range": range, "include_relationships": .bool(r.includeRelationships), "include_metadata": .bool(r.includeMetadata),
            ])
            return s
        }

        /// The envelope's `archive` object; format 2 adds `capture`.
        func archiveJSON(chainHash: String) -> JSONValue {
            var o: [String: JSONValue] = [
                "schema_version": .int(schemaVersion), "device_chain_hash": .string(chainHash),
                "from_observation_id": from.map { .int(Int($0)) } ?? .null, "to_observation_id": to.map { .int(Int($0)) } ?? .null,
                "as_of_observation_id": .int(Int(asOf)), "time_zone": zone,
            ]
            if formatVersion >= 2 { o["capture"] = capture }
            return .object(o)
        }
    }

    static func write(_ db: Database, request: ExportRequest, scope: Scope, envelope: ExportEnvelope, out: String, overwrite: Bool,
                      outputs: inout [ExportOutput], helper: ExportHelper?, batchSize: Int = RecordSink.batchSize, isCancelled: () -> Bool,
                      progress: (Int) -> Void) throws -> ExportResult {
        var manifest = try ExportManifestHasher(metadata: envelope.metadata)
        var byType: [String: Int] = [:]
        var relationships = 0
        var n = 0
        func tick() throws {
            n += 1
            if n == 1 || n & 1023 == 0 {
                if isCancelled() { throw cancelled }
                progress(n)
            }
        }
        let records = { () throws -> RecordItems in
            var items = try RecordItems(db: db, observationID: scope.at!, asOf: scope.asOf, types: request.types, dateFrom: request.dateFrom,
                                        dateTo: request.dateTo, includeMetadata: request.includeMetadata)
            items.humanFields = request.formatVersion >= 2
            return items
        }
        let rels = RelationshipItems(db: db, observationID: scope.at ?? 0, types: request.types, dateFrom: request.dateFrom, dateTo: request.dateTo)

        if request.kind == .observationRecordsCSV {
            let main = try ExportOutput(path: out, overwrite: overwrite); outputs.append(main)
            try main.write(CSV.row(request.formatVersion >= 2 ? CSVColumns.recordsV2 : CSVColumns.records))
            var source = try records()
            source.form = .csv
            let sink = RecordSink(manifest: manifest, output: main, csvExportID: envelope.exportID, batchSize: batchSize)
            try sink.drain(source, helper: helper, isCancelled: isCancelled, progress: progress)
            manifest = sink.manifest
            byType = sink.byType
            n = sink.count
            var files: [String: JSONValue] = ["records": .string((out as NSString).lastPathComponent)]
            var companions: [String] = []
            if request.includeRelationships {
                let relPath = out + ".relationships.csv"
                let rel = try ExportOutput(path: relPath, overwrite: overwrite); outputs.append(rel)
                try rel.write(CSV.row(CSVColumns.relationships))
                try rels.forEach { _, hash, fields in
                    manifest.add(itemHash: hash)
                    relationships += 1
                    try rel.write(CSV.row([envelope.exportID] + (try fields.map(CSV.text)) + [hash]))
                    try tick()
                    return true
                }
                files["relationships"] = .string((relPath as NSString).lastPathComponent)
                companions.append(relPath)
            }
            let counts = Self.counts(byType: byType, relationships: relationships)
            let hash = try manifest.finish(counts: counts, filters: scope.filters)
            let m = ExportEnvelope.manifest(recordCount: n, counts: counts, manifestHash: hash)
            let manifestPath = out + ".manifest.json"
            let mo = try ExportOutput(path: manifestPath, overwrite: overwrite); outputs.append(mo)
            try mo.write(try envelope.standalone(manifest: m, files: .object(files)))
            return ExportResult(exportID: envelope.exportID, kind: request.kind, path: out, companionPaths: companions + [manifestPath],
                                recordCount: n, manifestHash: hash)
        }

        let file = try ExportOutput(path: out, overwrite: overwrite); outputs.append(file)
        try file.write(try envelope.header())
        var first = true
        func emit(_ json: [UInt8], _ hash: String) throws {
            if !first { try file.write([UInt8(ascii: ","), 0x0A]) }
            first = false
            try file.write(json)
            manifest.add(itemHash: hash)
            try tick()
        }
        var counts: JSONValue
        switch request.kind {
        case .observationRecordsJSON:
            var source = try records()
            source.form = .json
            let sink = RecordSink(manifest: manifest, output: file, csvExportID: nil, batchSize: batchSize)
            try sink.drain(source, helper: helper, isCancelled: isCancelled, progress: progress)
            manifest = sink.manifest
            byType = sink.byType
            n = sink.count
            first = n == 0
            if request.includeRelationships {
                try rels.forEach { json, hash, _ in relationships += 1; try emit(json, hash); return true }
            }
            counts = Self.counts(byType: byType, relationships: relationships)
        case .observationDiffJSON:
            counts = try DiffItems.write(db, from: scope.from!, to: scope.to!, types: request.types, human: request.formatVersion >= 2, emit: emit)
        case .typeSummaryJSON:
            counts = try SummaryItems.write(db, at: scope.at!, types: request.types, human: request.formatVersion >= 2, emit: emit)
        case .archiveManifestJSON:
            counts = try ArchiveManifestItems.write(db, from: scope.from ?? 0, to: scope.to!, windows: request.formatVersion >= 2, emit: emit)
        case .observationRecordsCSV:
            fatalError("handled above")
        }
        if !first { try file.write([0x0A]) }
        if isCancelled() { throw cancelled }
        let hash = try manifest.finish(counts: counts, filters: scope.filters)
        try file.write(try ExportEnvelope.footer(manifest: ExportEnvelope.manifest(recordCount: n, counts: counts, manifestHash: hash)))
        return ExportResult(exportID: envelope.exportID, kind: request.kind, path: out, companionPaths: [], recordCount: n, manifestHash: hash)
    }

    static func counts(byType: [String: Int], relationships: Int) -> JSONValue {
        .object(["records": .int(byType.values.reduce(0, +)), "relationships": .int(relationships),
                 "by_type": .object(byType.mapValues { .int($0) })])
    }
}
