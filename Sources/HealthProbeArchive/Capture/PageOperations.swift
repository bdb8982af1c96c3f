import Foundation
import GRDB
import HealthProbeCanonical

/// The per-sample write logic of one page, inside its transaction, with
/// prepared statements (database-design.md 7.1, 7.2).
struct PageOperations {
    let db: Database
    let run: TypeRunWriter
    let obs: Int64
    let at: Double
    let typeID: Int64
    let runID: Int64

    let byUUID: FastStatement
    let byFingerprintAndUUID: FastStatement
    let byFingerprintPrefix: FastStatement
    let insertSample: FastStatement
    let markSeen: FastStatement
    let findVersion: FastStatement
    let insertVersion: FastStatement
    let insertEvent: FastStatement
    let openRange: FastStatement
    let closeRange: FastStatement

    init(_ db: Database, run: TypeRunWriter) throws {
        self.db = db
        self.run = run
        obs = run.session.observationID
        at = run.session.observedAt
        typeID = run.typeID
        runID = run.runID
        // A sample, its open range's version and that version's payload hash (then `extra`).
        func lookup(_ extra: String = "", from: String = "samples s") -> String {
            """
            SELECT s.id, r.version_id, v.payload_hash\(extra)
            FROM \(from)
            LEFT JOIN sample_visibility_ranges r ON r.sample_id = s.id AND +r.last_observation_id IS NULL
            LEFT JOIN sample_versions v ON v.id = r.version_id
            """
        }
        // INDEXED BY: statistics (ANALYZE) must never turn this into a scan of the type.
        byUUID = try FastStatement(db, lookup(from: "samples s INDEXED BY \(SampleIndexes.byUUID)")
                                   + " WHERE s.sample_uuid_hash = ? AND s.sample_type_id = ? ORDER BY s.id LIMIT 1")
        // A UUID sample is first looked up by its strict fingerprint: that index is in time
        // order, so the lookups of a capture read its pages nearly in sequence, where the
        // UUID hash index is read at random. A type holds at most one sample per UUID hash.
        byFingerprintAndUUID = try FastStatement(db, lookup() + " WHERE s.sample_type_id = ?1 AND \(SampleIndexes.fingerprintMatches("s.strict_fingerprint", "?2")) AND s.sample_uuid_hash = ?3")
        // The sample holding the fingerprint's prefix, whichever it is (at most one: the
        // prefix is unique in a type), with its whole fingerprint and whether it has no UUID.
        byFingerprintPrefix = try FastStatement(db, lookup(", s.strict_fingerprint, s.sample_uuid_hash IS NULL")
                                                + " WHERE s.sample_type_id = ?1 AND \(SampleIndexes.fingerprintPrefix("s.strict_fingerprint")) = \(SampleIndexes.fingerprintPrefix("?2"))")
        insertSample = try FastStatement(db, """
            INSERT OR IGNORE INTO samples(sample_type_id, sample_uuid_hash, strict_fingerprint, semantic_fingerprint, first_seen_observation_id, first_seen_at)
            VALUES (?, ?, ?, ?, ?, ?)
            """)
        markSeen = try FastStatement(db, "INSERT OR IGNORE INTO \(run.session.seenTable)(sample_id, type_run_id) VALUES (?, ?)")
        findVersion = try FastStatement(db, SampleIndexes.versionByPayload)
        insertVersion = try FastStatement(db, """
            INSERT INTO sample_versions(sample_id, payload_hash, start_date, end_date, value_kind, numeric_value, unit, category_value,
                workout_activity_type, duration_seconds, source_revision_id, hk_device_id, metadata_id, created_observation_id, creation_date)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """)
        insertEvent = try FastStatement(db, """
            INSERT OR IGNORE INTO sample_observation_events(observation_id, sample_id, version_id, event_kind, observed_at, evidence_kind)
            VALUES (?, ?, ?, ?, ?, ?)
            """)
        openRange = try FastStatement(db, """
            INSERT OR IGNORE INTO sample_visibility_ranges(sample_id, version_id, first_observation_id, last_observation_id, first_seen_at, last_seen_at)
            VALUES (?, ?, ?, NULL, ?, NULL)
            """)
        closeRange = try FastStatement(db, """
            UPDATE sample_visibility_ranges SET last_observation_id = ?, last_seen_at = max(first_seen_at, ?)
            WHERE sample_id = ? AND +last_observation_id IS NULL
            """)
    }

    /// The sample's id and its open range's version and payload hash, if any.
    struct Found { var sampleID: Int64; var openVersionID: Int64?; var openPayloadMatches: Bool }

    private func lookup(_ stmt: FastStatement, _ args: [FastStatement.Value], payloadHash: Digest32) throws -> Found? {
        var found: Found?
        try stmt.query(db, args) { row in
            if found == nil { found = Found(row, payloadHash: payloadHash) }
        }
        return found
    }

    /// What a strict fingerprint's slot in its type holds: nothing, a sample without a
    /// UUID whose fingerprint it is, or another sample (a UUID sample with that content,
    /// or a fingerprint that shares the 16-byte prefix the index keeps unique).
    enum Slot { case free, taken, found(Found) }

    private func slot(_ fp: Digest32, payloadHash: Digest32) throws -> Slot {
        var slot = Slot.free
        try byFingerprintPrefix.queryWhile(db, [.int(typeID), .digest(fp)]) { row in
            slot = row.hashEquals(3, fp) && row.int(4) == 1 ? .found(Found(row, payloadHash: payloadHash)) : .taken
            return false
        }
        return slot
    }

    /// Marks the sample seen by this run; true when it had been seen already.
    private func seen(_ sampleID: Int64, _ result: inout PageResult) throws -> Bool {
        if try markSeen.run(db, [.int(sampleID), .int(runID)]) == 0 { return true }
        result.newlySeen += 1
        return false
    }

    /// Inserts a new sample identity, trying occurrences from `start` until a
    /// free strict fingerprint is found (one whose 16-byte prefix no sample of the
    /// type holds: the index refuses the others, and OR IGNORE passes over them).
    private func createSample(_ n: NormalizedSample, startOccurrence: Int, into result: inout PageResult) throws -> Int64 {
        var occurrence = startOccurrence
        // Computed here, for a new identity only (see `NormalizedSample.Semantic`).
        let semantic = n.semanticFingerprint
        while true {
            let fp = try fingerprint(n, occurrence)
            let changed = try insertSample.run(db, [.int(typeID), .digest(n.uuidDigest), .digest(fp), .hash(semantic), .int(obs), .double(at)])
            if changed == 1 {
                let id = db.lastInsertedRowID
                _ = try seen(id, &result)
                return id
            }
            occurrence += 1
            if occurrence > 1_000_000 { throw ArchiveError(.invalidState, "too many identical samples of \(n.typeIdentifier)") }
        }
    }

    /// The strict fingerprint for `occurrence` (occurrence 0 was computed with the other hashes).
    private func fingerprint(_ n: borrowing NormalizedSample, _ occurrence: Int) throws -> Digest32 {
        if occurrence == 0 { return n.strictFingerprintDigest }
        return try SampleEncoding.strictFingerprintDigest(n, occurrence: occurrence)
    }

    /// Applies a page's samples in order, each read in place (iterating the array would
    /// copy every sample's strings).
    mutating func applyAll(_ normalized: [NormalizedSample], into result: inout PageResult) throws {
        try normalized.withUnsafeBufferPointer { samples in
            for i in samples.indices { try apply(samples[i], into: &result) }
        }
    }

    /// Applies one visible sample.
    mutating func apply(_ n: borrowing NormalizedSample, into result: inout PageResult) throws {
        result.records += 1
        var found: Found?
        var isNew = false
        if let uuidHash = n.uuidDigest {
            if !run.typeWasEmpty {
                found = try lookup(byFingerprintAndUUID, [.int(typeID), .digest(n.strictFingerprintDigest), .digest(uuidHash)], payloadHash: n.payloadDigest)
            }
            if found == nil { found = try lookup(byUUID, [.digest(uuidHash), .int(typeID)], payloadHash: n.payloadDigest) }
            if let f = found { _ = try seen(f.sampleID, &result) }
        } else {
            // Exact duplicates are told apart by occurrence within this run; a slot another
            // sample holds is passed over, as `createSample` passes over it.
            var occurrence = 0
            probe: while true {
                let fp = try fingerprint(n, occurrence)
                switch try slot(fp, payloadHash: n.payloadDigest) {
                case .free: break probe
                case .found(let f): if try !seen(f.sampleID, &result) { found = f; break probe }
                case .taken: break
                }
                occurrence += 1
            }
            if found == nil {
                let id = try createSample(n, startOccurrence: occurrence, into: &result)
                found = Found(sampleID: id, openVersionID: nil, openPayloadMatches: false)
                isNew = true
            }
        }
        if found == nil {
            let id = try createSample(n, startOccurrence: 0, into: &result)
            found = Found(sampleID: id, openVersionID: nil, openPayloadMatches: false)
            isNew = true
        }
        let f = found!
        if !isNew, f.openVersionID != nil, f.openPayloadMatches {
            result.unchanged += 1
            return
        }
        var versionID = isNew ? nil : try findVersion.firstInt(db, [.int(f.sampleID), .digest(n.payloadDigest)])
        // The source revision of a version inserted here (nil when the version existed).
        var insertedRevision: Int64??
        if versionID == nil {
            let inserted = try insertVersion(f.sampleID, n)
            versionID = inserted.id
            insertedRevision = .some(inserted.revision)
        }
        let vid = versionID!
        if let open = f.openVersionID, open != vid {
            try closeRange.run(db, [.int(obs), .double(run.previousVerifiedAt), .int(f.sampleID)])
            result.events.changed += try insertEvent.run(db, [.int(obs), .int(f.sampleID), .int(vid), .int(EventKind.representationChanged.code), .double(at), .int(EvidenceKind.reported.code)])
            try openRange.run(db, [.int(f.sampleID), .int(vid), .int(obs), .double(at)])
            result.changed += 1
        } else if f.openVersionID == nil {
            result.events.appeared += try insertEvent.run(db, [.int(obs), .int(f.sampleID), .int(vid), .int(EventKind.appeared.code), .double(at), .int(EvidenceKind.reported.code)])
            try openRange.run(db, [.int(f.sampleID), .int(vid), .int(obs), .double(at)])
            result.appeared += 1
            if run.visible != nil {
                let revision = try insertedRevision ?? revisionID(n)
                run.visible?.add(start: n.startDate, end: n.endDate, value: n.numericValue, unit: n.unit, revision: revision)
            }
        } else {
            result.unchanged += 1
        }
    }

    /// Applies deleted-object evidence for one UUID hash.
    mutating func applyDeleted(uuidHash: String, into result: inout PageResult) throws {
        result.records += 1
        var found: Found?
        try byUUID.query(db, [.hash(uuidHash), .int(typeID)]) { row in
            if found == nil { found = Found(sampleID: row.int(0)!, openVersionID: row.int(1), openPayloadMatches: false) }
        }
        if let f = found, let open = f.openVersionID {
            try closeRange.run(db, [.int(obs), .double(run.previousVerifiedAt), .int(f.sampleID)])
            result.events.disappeared += try insertEvent.run(db, [.int(obs), .int(f.sampleID), .int(open), .int(EventKind.disappeared.code), .double(at), .int(EvidenceKind.deletedObject.code)])
            result.disappeared += 1
            return
        }
        let sampleID: Int64
        if let f = found {
            sampleID = f.sampleID
        } else {
            let fp = SampleEncoding.deletedOnlyFingerprint(typeIdentifier: run.type.identifier, uuidHash: uuidHash)
            // OR IGNORE: a refused row would leave lastInsertedRowID naming another row.
            guard try insertSample.run(db, [.int(typeID), .hash(uuidHash), .hash(fp), .hash(nil), .int(obs), .double(at)]) == 1 else {
                throw ArchiveError(.invalidState, "a deleted-object sample of \(run.type.identifier) could not be recorded: its fingerprint is taken by another sample; run `hp-node verify --full`")
            }
            sampleID = db.lastInsertedRowID
        }
        if try insertEvent.run(db, [.int(obs), .int(sampleID), .int(nil), .int(EventKind.deletedObject.code), .double(at), .int(EvidenceKind.deletedObject.code)]) == 1 {
            result.deletedUnknown += 1
        }
    }

    /// Inserts a version; returns its id and its source revision.
    private mutating func insertVersion(_ sampleID: Int64, _ n: borrowing NormalizedSample) throws -> (id: Int64, revision: Int64?) {
        let revisionID = try revisionID(n)
        let deviceID = try deviceID(n)
        let metadataID = try metadataID(n)
        try insertVersion.run(db, [
            .int(sampleID), .digest(n.payloadDigest), .double(n.startDate), .double(n.endDate), .text(n.valueKind.rawValue),
            .double(n.numericValue), .text(n.unit), .int(n.categoryValue.map(Int64.init)), .int(n.workoutActivityType.map(Int64.init)),
            .double(n.durationSeconds), .int(revisionID), .int(deviceID), .int(metadataID), .int(obs), .double(n.creationDate),
        ])
        return (db.lastInsertedRowID, revisionID)
    }

    private func revisionID(_ n: NormalizedSample) throws -> Int64? {
        guard let source = n.source else { return nil }
        let sourceID: Int64
        if let id = run.session.caches.sources[source] {
            sourceID = id
        } else {
            try db.execute(sql: "INSERT OR IGNORE INTO sources(source_name_hash, bundle_identifier) VALUES (?, ?)", arguments: [source.nameHash, source.bundleIdentifier])
            sourceID = try Int64.fetchOne(db, sql: "SELECT id FROM sources WHERE ifnull(source_name_hash, '') = ifnull(?, '') AND ifnull(bundle_identifier, '') = ifnull(?, '')",
                                          arguments: [source.nameHash, source.bundleIdentifier])!
            run.session.caches.sources[source] = sourceID
        }
        let rev = n.revision ?? NormalizedSample.Revision()
        let key = WriteCaches.RevisionKey(sourceID: sourceID, revision: rev)
        if let id = run.session.caches.revisions[key] { return id }
        try db.execute(sql: "INSERT OR IGNORE INTO source_revisions(source_id, product_type, version, operating_system_version) VALUES (?, ?, ?, ?)",
                       arguments: [sourceID, rev.productType, rev.version, rev.operatingSystemVersion])
        let id = try Int64.fetchOne(db, sql: """
            SELECT id FROM source_revisions WHERE source_id = ? AND ifnull(product_type, '') = ifnull(?, '')
              AND ifnull(version, '') = ifnull(?, '') AND ifnull(operating_system_version, '') = ifnull(?, '')
            """, arguments: [sourceID, rev.productType, rev.version, rev.operatingSystemVersion])!
        run.session.caches.revisions[key] = id
        return id
    }

    private func deviceID(_ n: NormalizedSample) throws -> Int64? {
        guard let d = n.device else { return nil }
        if let id = run.session.caches.devices[d.deviceHash] { return id }
        try db.execute(sql: """
            INSERT OR IGNORE INTO hk_devices(device_hash, manufacturer_hash, model, hardware_version, firmware_version, software_version, local_identifier_hash, udi_hash)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?)
            """, arguments: [d.deviceHash, d.manufacturerHash, d.model, d.hardwareVersion, d.firmwareVersion, d.softwareVersion, d.localIdentifierHash, d.udiHash])
        let id = try Int64.fetchOne(db, sql: "SELECT id FROM hk_devices WHERE device_hash = ?", arguments: [d.deviceHash])!
        run.session.caches.devices[d.deviceHash] = id
        return id
    }

    private func metadataID(_ n: NormalizedSample) throws -> Int64? {
        guard let hash = n.metadataHash, let json = n.metadataJSON else { return nil }
        if let id = run.session.caches.metadata[hash] { return id }
        try db.execute(sql: "INSERT OR IGNORE INTO metadata_blobs(metadata_hash, metadata_json) VALUES (?, ?)", arguments: [hash, json])
        let id = try Int64.fetchOne(db, sql: "SELECT id FROM metadata_blobs WHERE metadata_hash = ?", arguments: [hash])!
        run.session.caches.metadata[hash] = id
        return id
    }
}

extension PageOperations.Found {
    /// From the current row of a lookup (its first three columns).
    init(_ row: FastStatement, payloadHash: Digest32) {
        self.init(sampleID: row.int(0)!, openVersionID: row.int(1), openPayloadMatches: row.hashEquals(2, payloadHash))
    }
}
