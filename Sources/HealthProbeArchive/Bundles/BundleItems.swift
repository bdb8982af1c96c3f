import Foundation
import GRDB
import HealthProbeCanonical

/// Builds the canonical items of one observation's bundle from the archive:
/// everything that observation added, in a fixed order, streamed from
/// SQLite in one read transaction (Protocol/bundles.md).
public enum ObservationBundleBuilder {
    /// Streams the items of observation `observationID` to `emit(kind, canonicalBytes, itemHash)`
    /// and returns the header, trailer and manifest hash.
    /// `format` 2 writes each sample first seen with its version, appeared event and opened range as one
    /// `new_sample` item; nil builds the format the archive sent (or will send) its bundle at that
    /// sequence in (`ArchiveMetadataRecord.bundleFormat`), so that a bundle is the same bytes whenever built.
    public static func build(_ db: Database, observationID obs: Int64, previousManifestHash: String?, format: Int? = nil,
                             onHeader: (BundleHeader) throws -> Void = { _ in },
                             emit: (BundleItemKind, [UInt8], Digest32) throws -> Void) throws -> (BundleHeader, BundleTrailer, String) {
        try build(db, observationID: obs, previousManifestHash: previousManifestHash, format: format, provenanceIDLimit: provenanceIDLimit, onHeader: onHeader, emit: emit)
    }

    /// A kind of provenance (sources, source revisions, devices, metadata) with more ids than
    /// this in one observation is read by a query of its own rather than by its ids.
    static let provenanceIDLimit = 1 << 16

    /// The same, with the id limit given (tests pass a small one).
    static func build(_ db: Database, observationID obs: Int64, previousManifestHash: String?, format asked: Int? = nil, provenanceIDLimit: Int,
                      onHeader: (BundleHeader) throws -> Void = { _ in },
                      emit: (BundleItemKind, [UInt8], Digest32) throws -> Void) throws -> (BundleHeader, BundleTrailer, String) {
        guard let o = try Row.fetchOne(db, sql: "SELECT * FROM observations WHERE id = ?", arguments: [obs]) else {
            throw ArchiveError(.notFound, "no observation \(obs)")
        }
        let chainID: Int64 = o["device_chain_id"]
        // Every row the observation wrote has a rowid above these (migration 12).
        let samplesBefore: Int64 = o["samples_before"] ?? 0, versionsBefore: Int64 = o["versions_before"] ?? 0
        let chainHash = try String.fetchOne(db, sql: "SELECT device_chain_hash FROM device_chains WHERE id = ?", arguments: [chainID])!
        let sequence = try Int.fetchOne(db, sql: "SELECT count(*) FROM observations WHERE device_chain_id = ? AND id <= ?", arguments: [chainID, obs])!
        let format = try asked ?? ArchiveMetadataRecord.bundleFormat(db, sequence: sequence)
        guard BundleHeader.formats.contains(format) else { throw ArchiveError(.invalidState, "bundle format \(format) is not one this build writes (\(BundleHeader.formats))") }
        let header = BundleHeader(deviceChainHash: chainHash, sequence: sequence, observationId: obs, previousManifestHash: previousManifestHash, format: format)
        var manifest = try ManifestHasher(header: header)
        try onHeader(header)

        // Every item is written by its typed model (`BundleItem.write`) into one reused buffer.
        var w = CanonicalJSONWriter(capacity: 1024)
        /// `stored`: the payload hash the archive holds for the item's version (and the version's
        /// id), checked against its payload as written, where the item does not carry the hash.
        func emitItem(_ item: BundleItem, stored: (hash: Digest32, version: Int64)? = nil) throws {
            w.reset()
            let payload = try item.write(to: &w)
            let bytes = w.bytes
            if let stored, let payload {
                let written = bytes.withUnsafeBytes { ArchiveHasher.sha256Digest(.payload, buffer: UnsafeRawBufferPointer(rebasing: $0[payload])) }
                guard written == stored.hash else {
                    throw ArchiveError(.invalidState, "sample_versions.payload_hash of version \(stored.version) is not the hash of its payload as a bundle writes it; the archive is damaged (run hp-node verify, restore it from a backup or from the server)")
                }
            }
            let hash = ArchiveHasher.sha256Digest(.item, bytes)
            manifest.add(itemHash: hash, kind: item.kind)
            try emit(item.kind, bytes, hash)
        }
        func each(_ sql: String, _ arguments: StatementArguments, _ body: (Row) throws -> Void) throws {
            let cursor = try Row.fetchCursor(db, sql: sql, arguments: arguments)
            while let row = try cursor.next() { try body(row) }
        }
        let c = StoredColumns.self

        try emitItem(.observation(BundleItem.Observation(
            appVersion: c.text(o, "app_version"), endedAt: o["ended_at"], notes: c.text(o, "notes"), observedAt: try c.required(o, "observed_at"),
            osVersion: c.text(o, "os_version"), schemaVersion: try c.required(o, "schema_version"),
            selectedTypeSetHash: try c.hash(o, "selected_type_set_hash"), startedAt: o["started_at"], status: try c.required(c.value(o, "status"), "status"),
            timeZoneIdentifier: c.text(o, "time_zone_identifier"), timeZoneSecondsFromGMT: o["time_zone_seconds_from_gmt"],
            triggerReason: try c.required(c.value(o, "trigger_reason"), "trigger_reason"))))
        try each("""
            SELECT DISTINCT st.type_identifier, st.display_name, st.category FROM sample_types st
            WHERE st.id IN (SELECT sample_type_id FROM observation_type_runs WHERE observation_id = ?
                            UNION SELECT sample_type_id FROM samples WHERE id > ? AND first_seen_observation_id = ?)
            ORDER BY st.type_identifier
            """, [obs, samplesBefore, obs]) { r in
            try emitItem(.sampleType(BundleItem.SampleType(category: try c.value(r, "category"), displayName: c.text(r, "display_name"),
                                                           typeIdentifier: try c.required(c.text(r, "type_identifier"), "type_identifier"))))
        }
        // Provenance referenced by the versions this observation created, in id order. The ids
        // are gathered in one pass over those versions, and each row is then read by its id:
        // one query a kind took four passes (about 0.9 s at a million versions, before a
        // bundle's first part could leave). A kind with more than `provenanceIDLimit` ids is
        // read by its query instead, so memory stays bounded.
        let ids = try ProvenanceIDs(db, versionsAfter: versionsBefore, observation: obs, limit: provenanceIDLimit)
        func provenance(_ ids: [Int64]?, byID: String, query: String, _ body: (Row) throws -> Void) throws {
            guard let ids else { return try each(query, [versionsBefore, obs], body) }
            let statement = try db.cachedStatement(sql: byID)
            for id in ids {
                if let row = try Row.fetchOne(statement, arguments: [id]) { try body(row) }
            }
        }
        try provenance(ids.sources, byID: "SELECT id, source_name_hash, bundle_identifier FROM sources WHERE id = ?", query: """
            SELECT DISTINCT so.id, so.source_name_hash, so.bundle_identifier FROM sample_versions v
            JOIN source_revisions sr ON sr.id = v.source_revision_id JOIN sources so ON so.id = sr.source_id
            WHERE v.id > ? AND v.created_observation_id = ? ORDER BY so.id
            """) { r in
            try emitItem(.source(BundleItem.Source(bundleIdentifier: c.text(r, "bundle_identifier"), sourceNameHash: try c.hash(r, "source_name_hash"))))
        }
        try provenance(ids.revisions, byID: """
            SELECT sr.id, so.source_name_hash, so.bundle_identifier, sr.product_type, sr.version, sr.operating_system_version
            FROM source_revisions sr JOIN sources so ON so.id = sr.source_id WHERE sr.id = ?
            """, query: """
            SELECT DISTINCT sr.id, so.source_name_hash, so.bundle_identifier, sr.product_type, sr.version, sr.operating_system_version
            FROM sample_versions v JOIN source_revisions sr ON sr.id = v.source_revision_id JOIN sources so ON so.id = sr.source_id
            WHERE v.id > ? AND v.created_observation_id = ? ORDER BY sr.id
            """) { r in
            try emitItem(.sourceRevision(BundleItem.SourceRevision(
                operatingSystemVersion: c.text(r, "operating_system_version"), productType: c.text(r, "product_type"),
                source: BundleItem.Source(bundleIdentifier: c.text(r, "bundle_identifier"), sourceNameHash: try c.hash(r, "source_name_hash")),
                version: c.text(r, "version"))))
        }
        try provenance(ids.devices, byID: "SELECT * FROM hk_devices WHERE id = ?", query: """
            SELECT DISTINCT h.* FROM sample_versions v JOIN hk_devices h ON h.id = v.hk_device_id
            WHERE v.id > ? AND v.created_observation_id = ? ORDER BY h.id
            """) { r in
            try emitItem(.device(BundleItem.Device(
                deviceHash: try c.required(c.hash(r, "device_hash"), "device_hash"), firmwareVersion: c.text(r, "firmware_version"),
                hardwareVersion: c.text(r, "hardware_version"), localIdentifierHash: try c.hash(r, "local_identifier_hash"),
                manufacturerHash: try c.hash(r, "manufacturer_hash"), model: c.text(r, "model"), softwareVersion: c.text(r, "software_version"),
                udiHash: try c.hash(r, "udi_hash"))))
        }
        try provenance(ids.metadata, byID: "SELECT id, metadata_hash, metadata_json FROM metadata_blobs WHERE id = ?", query: """
            SELECT DISTINCT m.id, m.metadata_hash, m.metadata_json FROM sample_versions v JOIN metadata_blobs m ON m.id = v.metadata_id
            WHERE v.id > ? AND v.created_observation_id = ? ORDER BY m.id
            """) { r in
            try emitItem(.metadata(BundleItem.Metadata(metadataHash: try c.required(c.hash(r, "metadata_hash"), "metadata_hash"),
                                                       metadataJSON: try c.required(c.text(r, "metadata_json"), "metadata_json"))))
        }
        // The four per-sample kinds: columns by position, stored hashes read as their
        // bytes, repeated text (a type, a unit, a source revision) kept from the row before.
        var types = LastText(), units = LastText()
        // A version's payload from columns 0 to 19 of a row (the version and new_sample queries
        // read the same columns): the type, the strict fingerprint, then the payload's.
        var lastRevision: (id: Int64, source: BundleItem.PayloadSource, revision: BundleItem.PayloadRevision)?
        func payload(_ r: FastStatement) throws -> (BundleItem.Payload, Digest32) {
            var source: BundleItem.PayloadSource?, revision: BundleItem.PayloadRevision?
            if let id = r.int(2) {
                if lastRevision?.id != id {
                    let text = { (col: Int32) in r.textBytes(col).map { ItemText(utf8: Array($0)) } }
                    lastRevision = (id, BundleItem.PayloadSource(bundleIdentifier: text(10), nameHash: try c.hexText(r, 11, "sources.source_name_hash")),
                                    BundleItem.PayloadRevision(operatingSystemVersion: text(12), productType: text(13), version: text(14)))
                }
                source = lastRevision?.source
                revision = lastRevision?.revision
            }
            let type = try c.required(types.text(r.textBytes(0)), "sample_types.type_identifier")
            let payload = BundleItem.Payload(
                categoryValue: r.int(3), creationDate: r.double(4), deviceHash: try c.hexText(r, 5, "hk_devices.device_hash"),
                durationSeconds: r.double(6), endDate: try c.required(r.double(7), "sample_versions.end_date"),
                metadataHash: try c.hexText(r, 8, "metadata_blobs.metadata_hash"), numericValue: r.double(9),
                source: source, sourceRevision: revision, startDate: try c.required(r.double(15), "sample_versions.start_date"),
                type: type, unit: units.text(r.textBytes(16)), valueKind: try c.required(c.value(r, 17, "sample_versions.value_kind"), "sample_versions.value_kind"),
                workoutActivityType: r.int(18))
            return (payload, try c.required(c.digest(r, 19, "sample_versions.payload_hash"), "sample_versions.payload_hash"))
        }
        let payloadColumns = """
            st.type_identifier, s.strict_fingerprint, v.source_revision_id, v.category_value, v.creation_date, h.device_hash,
            v.duration_seconds, v.end_date, m.metadata_hash, v.numeric_value, so.bundle_identifier, so.source_name_hash,
            sr.operating_system_version, sr.product_type, sr.version, v.start_date, v.unit, v.value_kind,
            v.workout_activity_type, v.payload_hash
            """
        let provenanceJoins = """
            LEFT JOIN source_revisions sr ON sr.id = v.source_revision_id LEFT JOIN sources so ON so.id = sr.source_id
            LEFT JOIN hk_devices h ON h.id = v.hk_device_id LEFT JOIN metadata_blobs m ON m.id = v.metadata_id
            """
        // Format 2: each sample first seen here with its appeared event, that event's version (created
        // here) and the range it opened, as one item; the rows it covers are left out of the kinds below.
        let covered = CoveredRows()
        var skip = (samples: "", versions: "", events: "", ranges: "")
        if format >= 2 {
            // A row whose dates are not the observation's, or whose stored payload hash is not its
            // payload's, would be carried as four items would not carry it: such a sample goes as
            // format 1's items (whose checks the receiver applies), or the build stops.
            let observedAt: Double = try c.required(o, "observed_at")
            try FastStatement(db, """
                SELECT \(payloadColumns), s.fuzzy_key, s.sample_uuid_hash, s.semantic_fingerprint, s.id, v.id, e.id, g.rowid
                FROM samples s JOIN sample_types st ON st.id = s.sample_type_id
                JOIN sample_observation_events e ON e.sample_id = s.id AND e.observation_id = ?2 AND e.event_kind = \(EventKind.appeared.code)
                     AND e.evidence_kind = \(EvidenceKind.reported.code)
                JOIN sample_versions v ON v.id = e.version_id AND v.created_observation_id = ?2 AND v.sample_id = s.id
                JOIN sample_visibility_ranges g ON g.sample_id = s.id AND g.version_id = v.id AND g.first_observation_id = ?2
                \(provenanceJoins)
                WHERE s.id > ?1 AND s.first_seen_observation_id = ?2 AND s.first_seen_at = ?3 AND e.observed_at = ?3 AND g.first_seen_at = ?3
                ORDER BY s.id
                """).query(db, [.int(samplesBefore), .int(obs), .double(observedAt)]) { r in
                guard let sample = r.int(23), let version = r.int(24), let event = r.int(25), let range = r.int(26) else { return }
                // A sample met twice (two such events or ranges: a damaged archive) is written once.
                guard covered.insert(sample: sample, version: version, event: event, range: range) else { return }
                let (p, hash) = try payload(r)
                try emitItem(.newSample(BundleItem.NewSample(
                    fuzzyKey: r.textBytes(20).map { ItemText(utf8: Array($0)) }, payload: p, payloadHash: hash,
                    sampleUUIDHash: try c.digest(r, 21, "samples.sample_uuid_hash"), semanticFingerprint: try c.digest(r, 22, "samples.semantic_fingerprint"),
                    strictFingerprint: try c.required(c.digest(r, 1, "samples.strict_fingerprint"), "samples.strict_fingerprint"))),
                    stored: (hash, version))
            }
            try covered.register(db)
            skip = (" AND NOT \(CoveredRows.function)(0, s.id)", " AND NOT \(CoveredRows.function)(1, v.id)",
                    " AND NOT \(CoveredRows.function)(2, e.id)", " AND NOT \(CoveredRows.function)(3, g.rowid)")
        }
        defer { covered.unregister(db) }
        try FastStatement(db, """
            SELECT s.first_seen_at, s.fuzzy_key, s.sample_uuid_hash, s.semantic_fingerprint, s.strict_fingerprint, st.type_identifier
            FROM samples s JOIN sample_types st ON st.id = s.sample_type_id
            WHERE s.id > ? AND s.first_seen_observation_id = ?\(skip.samples) ORDER BY s.id
            """).query(db, [.int(samplesBefore), .int(obs)]) { r in
            try emitItem(.sample(BundleItem.Sample(
                firstSeenAt: try c.required(r.double(0), "samples.first_seen_at"), fuzzyKey: r.textBytes(1).map { ItemText(utf8: Array($0)) },
                sampleUUIDHash: try c.digest(r, 2, "samples.sample_uuid_hash"), semanticFingerprint: try c.digest(r, 3, "samples.semantic_fingerprint"),
                strictFingerprint: try c.required(c.digest(r, 4, "samples.strict_fingerprint"), "samples.strict_fingerprint"),
                typeIdentifier: try c.required(types.text(r.textBytes(5)), "sample_types.type_identifier"))))
        }
        try FastStatement(db, """
            SELECT \(payloadColumns)
            FROM sample_versions v JOIN samples s ON s.id = v.sample_id JOIN sample_types st ON st.id = s.sample_type_id
            \(provenanceJoins)
            WHERE v.id > ? AND v.created_observation_id = ?\(skip.versions) ORDER BY v.id
            """).query(db, [.int(versionsBefore), .int(obs)]) { r in
            let (p, hash) = try payload(r)
            try emitItem(.version(BundleItem.Version(
                payload: p, payloadHash: hash,
                sample: BundleItem.SampleReference(strictFingerprint: try c.required(c.digest(r, 1, "samples.strict_fingerprint"), "samples.strict_fingerprint"), type: p.type))))
        }
        try FastStatement(db, """
            SELECT st.type_identifier, s.strict_fingerprint, e.event_kind, e.evidence_kind, e.observed_at, v.payload_hash
            FROM sample_observation_events e JOIN samples s ON s.id = e.sample_id JOIN sample_types st ON st.id = s.sample_type_id
            LEFT JOIN sample_versions v ON v.id = e.version_id
            WHERE e.observation_id = ?\(skip.events) ORDER BY e.id
            """).query(db, [.int(obs)]) { r in
            try emitItem(.event(BundleItem.Event(
                eventKind: try c.required(r.int(2).flatMap(EventKind.item(code:)), "sample_observation_events.event_kind"),
                evidenceKind: try c.required(r.int(3).flatMap(EvidenceKind.item(code:)), "sample_observation_events.evidence_kind"),
                observedAt: try c.required(r.double(4), "sample_observation_events.observed_at"),
                payloadHash: try c.digest(r, 5, "sample_versions.payload_hash"), sample: try c.reference(r, type: 0, fingerprint: 1, &types))))
        }
        try FastStatement(db, """
            SELECT st.type_identifier, s.strict_fingerprint, g.first_seen_at, v.payload_hash
            FROM sample_visibility_ranges g JOIN samples s ON s.id = g.sample_id JOIN sample_types st ON st.id = s.sample_type_id
            LEFT JOIN sample_versions v ON v.id = g.version_id
            WHERE g.first_observation_id = ?\(skip.ranges) ORDER BY g.rowid
            """).query(db, [.int(obs)]) { r in
            try emitItem(.rangeOpen(BundleItem.RangeOpen(
                firstSeenAt: try c.required(r.double(2), "sample_visibility_ranges.first_seen_at"),
                payloadHash: try c.digest(r, 3, "sample_versions.payload_hash"), sample: try c.reference(r, type: 0, fingerprint: 1, &types))))
        }
        // Format 1 closes ranges in the order their rows were made; format 2 by what they are (the
        // observation that opened each, its type, its sample), since a replica made a format-2
        // bundle's new samples' rows before its other ranges' and numbers them otherwise.
        let closeOrder = format >= 2 ? "g.first_observation_id, st.type_identifier, s.strict_fingerprint" : "g.rowid"
        try each("""
            SELECT st.type_identifier, lower(hex(s.strict_fingerprint)) AS strict_fingerprint, nullif(lower(hex(v.payload_hash)), '') AS payload_hash, g.last_seen_at,
                   (SELECT count(*) FROM observations o2 WHERE o2.device_chain_id = ? AND o2.id <= g.first_observation_id) AS first_sequence
            FROM sample_visibility_ranges g JOIN samples s ON s.id = g.sample_id JOIN sample_types st ON st.id = s.sample_type_id
            LEFT JOIN sample_versions v ON v.id = g.version_id
            WHERE g.last_observation_id = ? ORDER BY \(closeOrder)
            """, [chainID, obs]) { r in
            try emitItem(.rangeClose(BundleItem.RangeClose(
                firstSequence: try c.required(r, "first_sequence"), lastSeenAt: try c.required(r, "last_seen_at"),
                payloadHash: try c.hash(r, "payload_hash"), sample: try c.reference(r, "type_identifier", "strict_fingerprint"))))
        }
        try each("""
            SELECT pst.type_identifier AS source_type, lower(hex(p.strict_fingerprint)) AS source_fp, cst.type_identifier AS target_type,
                   lower(hex(c.strict_fingerprint)) AS target_fp, x.relationship_kind, m.metadata_hash
            FROM sample_relationships x JOIN samples p ON p.id = x.source_sample_id JOIN sample_types pst ON pst.id = p.sample_type_id
            JOIN samples c ON c.id = x.target_sample_id JOIN sample_types cst ON cst.id = c.sample_type_id
            LEFT JOIN metadata_blobs m ON m.id = x.metadata_id
            WHERE x.observation_id = ? ORDER BY x.id
            """, [obs]) { r in
            try emitItem(.relationship(BundleItem.Relationship(
                metadataHash: try c.hash(r, "metadata_hash"), relationshipKind: try c.required(c.value(r, "relationship_kind"), "relationship_kind"),
                source: try c.reference(r, "source_type", "source_fp"), target: try c.reference(r, "target_type", "target_fp"))))
        }
        try each("""
            SELECT st.type_identifier, t.* FROM observation_type_runs t JOIN sample_types st ON st.id = t.sample_type_id
            WHERE t.observation_id = ? ORDER BY t.id
            """, [obs]) { r in
            func anchor(_ col: String) -> ItemText? { (r[col] as Data?).map { ItemText($0.base64EncodedString()) } }
            try emitItem(.typeRun(BundleItem.TypeRun(
                anchorAfter: anchor("anchor_after"), anchorBefore: anchor("anchor_before"),
                deletedEventCount: try c.required(r, "deleted_event_count"), endedAt: r["ended_at"], errorKind: try c.value(r, "error_kind"),
                errorMessageHash: try c.hash(r, "error_message_hash"), insertedEventCount: try c.required(r, "inserted_event_count"),
                rejectedRecordCount: try c.required(r, "rejected_record_count"), runKind: try c.required(c.value(r, "run_kind"), "run_kind"),
                startedAt: r["started_at"], status: try c.required(c.value(r, "status"), "status"),
                typeIdentifier: try c.required(c.text(r, "type_identifier"), "type_identifier"), verifiedVisibleCount: r["verified_visible_count"])))
        }
        let trailer = manifest.trailer
        return (header, trailer, try manifest.finish())
    }
}

/// The rows that the versions an observation created refer to: their source revisions, those
/// revisions' sources, their devices and their metadata, each kind as ids in ascending order;
/// nil for a kind with more than `limit` ids (its query reads it instead).
struct ProvenanceIDs {
    var sources, revisions, devices, metadata: [Int64]?

    init(_ db: Database, versionsAfter: Int64, observation: Int64, limit: Int) throws {
        var revisions = Gathered(limit: limit), devices = Gathered(limit: limit), metadata = Gathered(limit: limit)
        // Only integer ids: a join on another value (a damaged archive's) matches no row.
        try FastStatement(db, """
            SELECT iif(typeof(source_revision_id) = 'integer', source_revision_id, NULL), iif(typeof(hk_device_id) = 'integer', hk_device_id, NULL),
                   iif(typeof(metadata_id) = 'integer', metadata_id, NULL)
            FROM sample_versions WHERE id > ? AND created_observation_id = ?
            """)
            .query(db, [.int(versionsAfter), .int(observation)]) { r in
                revisions.add(r.int(0))
                devices.add(r.int(1))
                metadata.add(r.int(2))
            }
        (self.revisions, self.devices, self.metadata) = (revisions.sorted, devices.sorted, metadata.sorted)
        if let ids = self.revisions {
            let statement = try db.cachedStatement(sql: "SELECT iif(typeof(source_id) = 'integer', source_id, NULL) FROM source_revisions WHERE id = ?")
            var sources = Set<Int64>()
            for id in ids {
                if let source = try Int64.fetchOne(statement, arguments: [id]) { sources.insert(source) }
            }
            self.sources = sources.sorted()
        }
    }

    /// One kind's distinct ids, until there are more than `limit` (then nil).
    private struct Gathered {
        let limit: Int
        private var ids: Set<Int64>? = []
        /// The id added last: consecutive versions mostly share it, and it is not hashed again.
        private var last: Int64?

        init(limit: Int) { self.limit = limit }

        mutating func add(_ id: Int64?) {
            guard let id, id != last else { return }
            last = id
            ids?.insert(id)
            if let n = ids?.count, n > limit { ids = nil }
        }

        var sorted: [Int64]? { ids?.sorted() }
    }
}
