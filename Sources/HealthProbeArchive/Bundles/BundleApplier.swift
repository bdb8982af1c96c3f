import Foundation
import GRDB
import HealthProbeCanonical

/// Applies verified observation bundles to a replica archive (the same v2
/// schema), one chain at a time, in sequence order. Verification and
/// application run in one pass inside one transaction: any failed check rolls
/// everything back, so nothing of a bad bundle is stored.
public enum BundleApplier {
    public enum Outcome: Sendable, Equatable {
        /// Applied as a new observation of the replica.
        case applied(observationID: Int64, sequence: Int)
        /// The same bundle was applied before; nothing changed.
        case alreadyApplied(sequence: Int)
    }

    /// Why a bundle was not applied (besides `BundleError`s from verification).
    public struct ApplyError: CodedError {
        public enum Code: String, Sendable { case divergence, outOfOrder = "out_of_order", unresolved }
        public let code: Code
        public var codeName: String? { code.rawValue }
        public let message: String
        public var cause: (any Error)? { nil }
        /// The line of the item that could not be applied (1-based: line 1 is the header).
        public let line: Int?

        init(code: Code, line: Int? = nil, message: String) {
            self.code = code
            self.line = line
            self.message = line.map { "line \($0): " + message } ?? message
        }
    }

    /// How the sample tables' secondary indexes are kept while a bundle is applied.
    public enum IndexMode: Sendable, Equatable {
        /// Every row goes into every index as it is inserted.
        case maintained
        /// Dropped before the items and built again after them (`DeferredIndexes`)
        /// when a bundle of `bundleBytes` likely adds at least as many samples as
        /// the replica holds (a chain's first sync); else `maintained`.
        case automatic(bundleBytes: Int)
        /// Always dropped and built again (tests of that path on small bundles).
        case deferred
        /// Dropped and built again when the replica holds no samples yet (a chain's first
        /// bundle arriving as a stream, whose size is known only at its end); else `maintained`.
        case whenEmpty
    }

    /// Applies the bundle given as lines (header, items, trailer) with its manifest hash.
    /// Lines are verified on a second thread while the previous ones are applied.
    /// `manifestHash` nil takes the hash the verification computes (a rebuild, whose bundles
    /// come without one): the replica must then hold no bundle at the bundle's sequence.
    /// `manifestHashAtEnd`: with `manifestHash` nil, the hash the bundle must have, known only once
    /// its lines ended (a streamed bundle: `BUNDLE_STREAM_END` declares it); what it throws refuses the bundle.
    /// `beforeCommit` runs inside the transaction once the bundle is applied; what it throws rolls everything back.
    /// `remembered`: the samples and versions this bundle inserts that are kept in memory for its
    /// later lines (`InsertedRows`); tests pass 0 to find every one through SQL.
    public static func apply(_ replica: Archive, lines: some Sequence<[UInt8]>, manifestHash: String?, now: Double,
                             indexes: IndexMode = .maintained, remembered: Int = InsertedRows.defaultLimit,
                             manifestHashAtEnd: (() throws -> String)? = nil,
                             beforeCommit: (Database, Outcome) throws -> Void = { _, _ in }) throws -> Outcome {
        let verified = VerifiedLines(lines)
        defer { verified.cancel() }
        do {
            return try replica.writer.write { db in
                let outcome = try applyVerified(db, verified, manifestHash: manifestHash, atEnd: manifestHashAtEnd, now: now, indexes: indexes, remembered: remembered)
                try beforeCommit(db, outcome)
                return outcome
            }
        } catch let e as DatabaseError where e.resultCode == .SQLITE_CONSTRAINT {
            // Only bundle content can break a constraint: a row the replica (or the bundle) has already.
            // SQLite's own text names tables and columns; a device is told the rule instead.
            throw BundleError(.reference, line: nil, "the bundle adds a row the replica (or the bundle) already holds")
        }
    }

    private static func applyVerified(_ db: Database, _ verified: VerifiedLines, manifestHash: String?, atEnd: (() throws -> String)?, now: Double, indexes: IndexMode,
                                      remembered: Int) throws -> Outcome {
        var state: State?
        var deferred: DeferredIndexes?
        // The kind of the last item applied, while indexes are deferred.
        var lastKind = BundleItemKind.observation
        var number = 0
        // Each batch applied is dropped on a thread of its own: freeing its items (their text
        // and byte arrays) took about a tenth of the applying thread in a first sync.
        let dropping = ConsumerStage<[BundleLine]>(name: "healthprobe.bundle.drop", depth: 8) { _ in }
        defer { dropping.cancel() }
        while let batch = try verified.next() {
            for decoded in batch {
                number += 1
                switch decoded {
                case .header(let header):
                    switch try State.begin(db, header: header, manifestHash: manifestHash, now: now, remembered: remembered) {
                    case .alreadyApplied(let sequence): return .alreadyApplied(sequence: sequence)
                    case .apply(let s):
                        state = s
                        if DeferredIndexes.worthDeferring(indexes, samplesBefore: s.samplesBefore) { deferred = try DeferredIndexes.drop(db) }
                    }
                case .item(let item):
                    // The verifier put the header first.
                    guard state != nil else { throw BundleError(.malformed, line: number, "line \(number): an item before the header") }
                    if deferred != nil, item.kind > lastKind {
                        // Items come in kind order: a table whose items are all in is done, and its indexes
                        // are built now, beside the lines still arriving, not in the tail after the last.
                        for (kind, table) in Self.tablesDone where lastKind <= kind && item.kind > kind { try rebuild(&deferred, db, table: table) }
                        lastKind = item.kind
                    }
                    do {
                        try state!.apply(item, line: number, db: db)
                    } catch let e as ApplyError where e.line == nil {
                        throw ApplyError(code: e.code, line: number, message: e.message)
                    } catch let e as DatabaseError where e.resultCode == .SQLITE_CONSTRAINT {
                        throw BundleError(.reference, line: number, "line \(number): the \(item.kind.rawValue) item adds \(State.what(item.kind)) the replica (or the bundle) already holds")
                    }
                case .trailer:
                    break
                }
            }
            // Handed over, not copied: the last reference, and so the freeing, goes with it.
            try dropping.submit(consume batch)
        }
        try dropping.finish()
        guard let s = state else { throw BundleError(.malformed, line: nil, "the bundle is empty") }
        // Before anything reads through them: the aggregates and the checks below do.
        try rebuild(&deferred, db, table: nil)
        var verifier = verified.finish()
        _ = try verifier.finish(expected: try manifestHash ?? atEnd?(), previousManifestHash: .some(s.previousLogged))
        guard let computed = verifier.manifestHash else { throw BundleError(.malformed, line: nil, "the bundle ends before its trailer (truncated)") }
        // The replica's aggregates are derived here, never carried in bundles: from what the
        // lines added up to where that is exact (`BundleSums`), else from the rows.
        try Aggregates.update(db, observationID: s.observationID, now: now, changes: s.sums.changes, visible: s.sums.visible)
        // What the bundle touched must pass the replica's own checks, or nothing is stored.
        let problems = try ObservationChecks.problems(db, observationID: s.observationID, samplesAfter: s.samplesBefore)
        guard problems.isEmpty else {
            throw BundleError(.replicaCheck, line: nil, "applied, the bundle would leave the replica failing its integrity checks: "
                              + problems.joined(separator: "; "))
        }
        try db.cachedStatement(sql: """
            INSERT INTO bundle_log(device_chain_id, sequence, observation_id, manifest_hash, previous_manifest_hash, item_count, direction, recorded_at)
            VALUES (?, ?, ?, ?, ?, ?, 'received', ?)
            """).execute(arguments: [s.chainID, s.header.sequence, s.observationID, computed, s.header.previousManifestHash, verifier.itemCount, now])
        // The chain's format from here on, for a node that restored it and builds its bundles again.
        if s.header.bundleFormat >= 2 { try ArchiveMetadataRecord.beginBundleFormat2(db, at: s.header.sequence) }
        return s.outcome
    }

    /// The tables that get no row after the items of a kind: a sample item inserts the last
    /// sample, a version item the last version, an event item the last event (range items
    /// still change ranges after the range_open items, so theirs are built at the end).
    static let tablesDone: [(BundleItemKind, String)] = [(.sample, "samples"), (.version, "sample_versions"), (.event, "sample_observation_events")]

    /// Builds the deferred indexes of `table` (nil: of every table) again.
    private static func rebuild(_ deferred: inout DeferredIndexes?, _ db: Database, table: String?) throws {
        do {
            if let table { try deferred?.rebuild(db, table: table) } else { try deferred?.rebuild(db) }
        } catch let e as DatabaseError where e.resultCode == .SQLITE_CONSTRAINT {
            throw BundleError(.reference, line: nil, "the bundle adds a sample, or a version of a sample, that the replica (or the bundle) already holds: "
                              + "a sample's strict fingerprint, or a version's payload hash, shares its first 16 bytes with another's")
        }
    }

    struct State {
        let header: BundleHeader
        let chainID: Int64
        let previousLogged: String?
        /// The largest sample rowid before this bundle's samples.
        let samplesBefore: Int64
        var observationID: Int64 = 0
        /// The observation's `observed_at` (a new_sample's dates).
        var observedAt: Double = 0
        var outcome: Outcome
        /// Sample types met so far, by the UTF-8 of their identifier.
        var typeIDs: [(name: [UInt8], id: Int64)] = []
        /// The rowid the next sample reference most likely names: items of each kind
        /// follow the sender's row order, which is the order samples were inserted in.
        var sampleGuess: Int64 = 0
        /// The same for version references (event and range lines, in the versions' order).
        var versionGuess: Int64 = 0
        /// Samples and versions this bundle inserted (its later lines name them).
        var inserted: InsertedRows
        /// What the lines add up to per type, for the aggregates.
        var sums: BundleSums
        /// The source revision, device and metadata a version item resolved last, by
        /// what named them: consecutive versions mostly share them.
        var lastRevision = LastLookup<RevisionKey>(), lastDevice = LastLookup<Digest32>(), lastMetadata = LastLookup<Digest32>()
        let st: Statements

        /// One remembered lookup: the key and the id it resolved to (nil: none).
        struct LastLookup<Key: Equatable> {
            private var key: Key?
            private var id: Int64?

            /// The id of `key`: remembered when it is the last one's, else `resolve()`d and remembered.
            mutating func id(_ key: Key, resolve: () throws -> Int64?) rethrows -> Int64? {
                if let last = self.key, last == key { return id }
                let resolved = try resolve()
                self.key = key
                id = resolved
                return resolved
            }
        }

        /// What names a version's source revision: its source and revision members.
        struct RevisionKey: Equatable {
            let source: BundleItem.PayloadSource
            let revision: BundleItem.PayloadRevision
        }

        /// The hot statements, prepared once per bundle.
        struct Statements {
            let sampleByRowid, sampleByFingerprint, versionByRowid, versionID, source, revision, device, metadata: FastStatement
            let insertSample, insertVersion, insertEvent, openRange, closeRange, firstObservation: FastStatement

            init(_ db: Database) throws {
                sampleByRowid = try FastStatement(db, "SELECT sample_type_id, strict_fingerprint FROM samples WHERE id = ?")
                sampleByFingerprint = try FastStatement(db, "SELECT id FROM samples WHERE sample_type_id = ?1 AND \(SampleIndexes.fingerprintMatches("strict_fingerprint", "?2"))")
                versionByRowid = try FastStatement(db, "SELECT sample_id, payload_hash FROM sample_versions WHERE id = ?")
                versionID = try FastStatement(db, SampleIndexes.versionByPayload)
                source = try FastStatement(db, "SELECT id FROM sources WHERE ifnull(source_name_hash, '') = ifnull(?, '') AND ifnull(bundle_identifier, '') = ifnull(?, '')")
                revision = try FastStatement(db, """
                    SELECT id FROM source_revisions WHERE source_id = ? AND ifnull(product_type, '') = ifnull(?, '')
                      AND ifnull(version, '') = ifnull(?, '') AND ifnull(operating_system_version, '') = ifnull(?, '')
                    """)
                device = try FastStatement(db, "SELECT id FROM hk_devices WHERE device_hash = ?")
                metadata = try FastStatement(db, "SELECT id FROM metadata_blobs WHERE metadata_hash = ?")
                insertSample = try FastStatement(db, """
                    INSERT INTO samples(sample_type_id, sample_uuid_hash, strict_fingerprint, semantic_fingerprint, fuzzy_key, first_seen_observation_id, first_seen_at)
                    VALUES (?, ?, ?, ?, ?, ?, ?)
                    """)
                insertVersion = try FastStatement(db, """
                    INSERT INTO sample_versions(sample_id, payload_hash, start_date, end_date, value_kind, numeric_value, unit, category_value,
                        workout_activity_type, duration_seconds, source_revision_id, hk_device_id, metadata_id, created_observation_id, creation_date)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """)
                insertEvent = try FastStatement(db, "INSERT INTO sample_observation_events(observation_id, sample_id, version_id, event_kind, observed_at, evidence_kind) VALUES (?, ?, ?, ?, ?, ?)")
                openRange = try FastStatement(db, "INSERT INTO sample_visibility_ranges(sample_id, version_id, first_observation_id, last_observation_id, first_seen_at, last_seen_at) VALUES (?, ?, ?, NULL, ?, NULL)")
                // Only an open range closes, and never before it opened.
                closeRange = try FastStatement(db, """
                    UPDATE sample_visibility_ranges SET last_observation_id = ?1, last_seen_at = ?2
                    WHERE sample_id = ?3 AND version_id IS ?4 AND first_observation_id = ?5 AND last_observation_id IS NULL AND first_seen_at <= ?2
                    """)
                firstObservation = try FastStatement(db, "SELECT id FROM observations WHERE device_chain_id = ? ORDER BY id LIMIT 1 OFFSET ?")
            }
        }

        enum Begin {
            case alreadyApplied(sequence: Int)
            case apply(State)
        }

        static func begin(_ db: Database, header: BundleHeader, manifestHash: String?, now: Double, remembered: Int) throws -> Begin {
            try db.cachedStatement(sql: "INSERT OR IGNORE INTO device_chains(device_chain_hash, created_at, recovered_from_keychain) VALUES (?, ?, 0)").execute(arguments: [header.deviceChainHash, now])
            let chainID = try Int64.fetchOne(db.cachedStatement(sql: "SELECT id FROM device_chains WHERE device_chain_hash = ?"), arguments: [header.deviceChainHash])!
            if let logged = try String.fetchOne(db.cachedStatement(sql: "SELECT manifest_hash FROM bundle_log WHERE device_chain_id = ? AND direction = 'received' AND sequence = ?"),
                                                arguments: [chainID, header.sequence]) {
                guard let manifestHash else {
                    throw ApplyError(code: .divergence, message: "chain \(header.deviceChainHash.prefix(16)) already has a bundle at sequence \(header.sequence) (stored \(logged.prefix(16))); a bundle given without its manifest hash is applied only where none is")
                }
                guard logged == manifestHash else {
                    throw ApplyError(code: .divergence, message: "chain \(header.deviceChainHash.prefix(16)) already has a different bundle at sequence \(header.sequence) (stored \(logged.prefix(16)), received \(manifestHash.prefix(16))): refused as divergence")
                }
                return .alreadyApplied(sequence: header.sequence)
            }
            let last = try Row.fetchOne(db.cachedStatement(sql: "SELECT sequence, manifest_hash FROM bundle_log WHERE device_chain_id = ? AND direction = 'received' ORDER BY sequence DESC LIMIT 1"),
                                        arguments: [chainID])
            let lastSequence: Int = last?["sequence"] ?? 0
            guard header.sequence == lastSequence + 1 else {
                throw ApplyError(code: .outOfOrder, message: "chain \(header.deviceChainHash.prefix(16)) expects sequence \(lastSequence + 1) next, not \(header.sequence); send the missing bundles first")
            }
            // A chain's format never goes back (what a node sent, it builds again in the same format).
            if header.bundleFormat < 2, let from = try ArchiveMetadataRecord.bundleFormat2From(db), from <= header.sequence {
                throw BundleError(.malformed, line: 1, "header: bundle_format 1, but this chain's bundles are format 2 from sequence \(from) on; a chain does not go back to format 1")
            }
            let samplesBefore = try Int64.fetchOne(db.cachedStatement(sql: "SELECT ifnull(max(id), 0) FROM samples")) ?? 0
            return .apply(State(header: header, chainID: chainID, previousLogged: last?["manifest_hash"], samplesBefore: samplesBefore,
                                outcome: .applied(observationID: 0, sequence: header.sequence), inserted: InsertedRows(limit: remembered),
                                sums: BundleSums(sweeping: samplesBefore == 0),
                                st: try Statements(db)))
        }

        /// Text as a statement value.
        static func t(_ text: ItemText?) -> FastStatement.Value { .utf8(text?.utf8) }

        /// The replica's id of the sample type named `name`.
        mutating func typeID(_ db: Database, _ name: ItemText) throws -> Int64 {
            for t in typeIDs where name.equals(t.name) { return t.id }
            let id = try Self.typeID(db, name.string)
            typeIDs.append((Array(name.utf8), id))
            return id
        }

        static func typeID(_ db: Database, _ type: String) throws -> Int64 {
            try db.cachedStatement(sql: "INSERT OR IGNORE INTO sample_types(type_identifier) VALUES (?)").execute(arguments: [type])
            return try Int64.fetchOne(db.cachedStatement(sql: "SELECT id FROM sample_types WHERE type_identifier = ?"), arguments: [type])!
        }

        /// The replica's row of a sample reference (type and strict fingerprint): first
        /// the guessed next rowid, checked (in memory, by its key's tag, when it is in the run
        /// of samples this bundle inserted; else in SQL); then the samples this bundle inserted
        /// outside the run; else the identity index. Each way finds the same row (the run's
        /// tags but for a chance of 2^-64, `InsertedRows`), so the order changes only the cost.
        mutating func sampleID(_ db: Database, _ ref: BundleItem.SampleReference) throws -> Int64 {
            try sampleID(db, ref, type: typeID(db, ref.type))
        }

        /// The same, with the replica's id of the reference's type (`t`) already known.
        mutating func sampleID(_ db: Database, _ ref: BundleItem.SampleReference, type t: Int64) throws -> Int64 {
            let fp = ref.strictFingerprint
            let guess = sampleGuess
            let guessHolds = try inserted.inRun(guess) ? inserted.sample(at: guess, type: t, fingerprint: fp) != nil
                : guess > 0 && st.sampleByRowid.firstRowMatches(db, [.int(guess)], { $0.int(0) == t && $0.hashEquals(1, fp) })
            if guessHolds { sampleGuess = guess + 1; return guess }
            if let id = inserted.sample(type: t, fingerprint: fp) { sampleGuess = id + 1; return id }
            guard let id = try st.sampleByFingerprint.firstInt(db, [.int(t), .digest(fp)]) else {
                throw ApplyError(code: .unresolved, message: "an item refers to a sample the replica does not have (\(ref.type.string))")
            }
            sampleGuess = id + 1
            return id
        }

        /// The replica's version of `sample` with `payloadHash`: first the versions this bundle
        /// inserted (in memory), then the guessed next version rowid, checked (one lookup by
        /// rowid, read in order, where the payload index costs two), else that index.
        mutating func versionID(_ db: Database, _ payloadHash: Digest32?, sample: Int64) throws -> Int64? {
            guard let payloadHash else { return nil }
            if let id = inserted.version(sample: sample, payloadHash: payloadHash) { versionGuess = id + 1; return id }
            let guess = versionGuess
            if guess > 0, try st.versionByRowid.firstRowMatches(db, [.int(guess)], { $0.int(0) == sample && $0.hashEquals(1, payloadHash) }) {
                versionGuess = guess + 1
                return guess
            }
            guard let id = try st.versionID.firstInt(db, [.int(sample), .digest(payloadHash)]) else {
                throw ApplyError(code: .unresolved, message: "an item refers to a payload version the replica does not have")
            }
            versionGuess = id + 1
            return id
        }

        /// Inserts a sample (a `sample` or `new_sample` item's) and returns its rowid.
        mutating func insertSample(_ db: Database, type: Int64, uuid: Digest32?, strict: Digest32, semantic: Digest32?, fuzzyKey: ItemText?,
                                   firstSeenAt: Double, line: Int, kind: BundleItemKind) throws -> Int64 {
            // The same sample twice in one bundle: found here when kept by key (outside the run),
            // else refused at its line by the UNIQUE index on type and fingerprint prefix.
            if inserted.sample(type: type, fingerprint: strict) != nil {
                throw BundleError(.reference, line: line, "line \(line): the \(kind.rawValue) item adds \(Self.what(.sample)) the bundle already holds")
            }
            try st.insertSample.run(db, [.int(type), .digest(uuid), .digest(strict), .digest(semantic), Self.t(fuzzyKey), .int(observationID), .double(firstSeenAt)])
            let id = db.lastInsertedRowID
            inserted.inserted(sample: id, type: type, fingerprint: strict)
            return id
        }

        /// Inserts a version of `sample` (a `version` or `new_sample` item's) and returns its rowid.
        mutating func insertVersion(_ db: Database, _ p: BundleItem.Payload, hash: Digest32, sample: Int64, type: Int64) throws -> Int64 {
            let t = Self.t
            var revision: Int64?
            if let src = p.source {
                let rev = p.sourceRevision ?? BundleItem.PayloadRevision()
                revision = try lastRevision.id(RevisionKey(source: src, revision: rev)) {
                    guard let sid = try st.source.firstInt(db, [.hexText(src.nameHash), t(src.bundleIdentifier)]) else { return nil }
                    return try st.revision.firstInt(db, [.int(sid), t(rev.productType), t(rev.version), t(rev.operatingSystemVersion)])
                }
                guard revision != nil else { throw ApplyError(code: .unresolved, message: "a version names a source revision the bundle and the replica do not have") }
            }
            let deviceID = try p.deviceHash.flatMap { d in try lastDevice.id(d) { try st.device.firstInt(db, [.hexText(d)]) } }
            let metadataID = try p.metadataHash.flatMap { m in try lastMetadata.id(m) { try st.metadata.firstInt(db, [.hexText(m)]) } }
            guard (p.deviceHash == nil) == (deviceID == nil) else { throw ApplyError(code: .unresolved, message: "a version names a device the bundle and the replica do not have") }
            guard (p.metadataHash == nil) == (metadataID == nil) else { throw ApplyError(code: .unresolved, message: "a version names metadata the bundle and the replica do not have") }
            try st.insertVersion.run(db, [.int(sample), .digest(hash), .double(p.startDate), .double(p.endDate),
                                          .text(p.valueKind.rawValue), .double(p.numericValue), t(p.unit),
                                          .int(p.categoryValue), .int(p.workoutActivityType),
                                          .double(p.durationSeconds), .int(revision), .int(deviceID), .int(metadataID), .int(observationID),
                                          .double(p.creationDate)])
            let id = db.lastInsertedRowID
            inserted.inserted(version: id, sample: sample, payloadHash: hash)
            sums.version(type: type, start: p.startDate, end: p.endDate, value: p.numericValue, unit: p.unit, revision: revision)
            return id
        }

        /// What an item of `kind` adds, for a refusal's message.
        static func what(_ kind: BundleItemKind) -> String {
            switch kind {
            case .sample, .newSample: "a sample (its strict fingerprint's first 16 bytes) that"
            case .version: "a version (its payload hash's first 16 bytes) that"
            case .event: "an event of this kind for this sample and observation that"
            case .rangeOpen: "a range that"
            case .relationship: "a relationship that"
            case .typeRun: "a second run of this type that"
            case .observation, .sampleType, .source, .sourceRevision, .device, .metadata, .rangeClose: "a row that"
            }
        }

        mutating func apply(_ item: BundleItem, line: Int, db: Database) throws {
            let obs = observationID
            let t = Self.t
            switch item {
            case .event(let e):
                let type = try typeID(db, e.sample.type)
                let sample = try sampleID(db, e.sample, type: type)
                let version = try versionID(db, e.payloadHash, sample: sample)
                try st.insertEvent.run(db, [.int(obs), .int(sample), .int(version), .int(e.eventKind.code), .double(e.observedAt), .int(e.evidenceKind.code)])
                sums.event(type: type, kind: e.eventKind)
            case .rangeOpen(let r):
                let type = try typeID(db, r.sample.type)
                let sample = try sampleID(db, r.sample, type: type)
                let version = try versionID(db, r.payloadHash, sample: sample)
                try st.openRange.run(db, [.int(sample), .int(version), .int(obs), .double(r.firstSeenAt)])
                sums.rangeOpened(type: type, withVersion: version != nil)
            case .version(let v):
                let type = try typeID(db, v.sample.type)
                let sample = try sampleID(db, v.sample, type: type)
                _ = try insertVersion(db, v.payload, hash: v.payloadHash, sample: sample, type: type)
            case .newSample(let n):
                // The sample, its version, its appeared event and its opened range, as four items would add them.
                let type = try typeID(db, n.payload.type)
                let sample = try insertSample(db, type: type, uuid: n.sampleUUIDHash, strict: n.strictFingerprint, semantic: n.semanticFingerprint,
                                              fuzzyKey: n.fuzzyKey, firstSeenAt: observedAt, line: line, kind: .newSample)
                let version = try insertVersion(db, n.payload, hash: n.payloadHash, sample: sample, type: type)
                try st.insertEvent.run(db, [.int(obs), .int(sample), .int(version), .int(EventKind.appeared.code), .double(observedAt), .int(EvidenceKind.reported.code)])
                sums.event(type: type, kind: .appeared)
                try st.openRange.run(db, [.int(sample), .int(version), .int(obs), .double(observedAt)])
                sums.rangeOpened(type: type, withVersion: true)
            case .sample(let s):
                let type = try typeID(db, s.typeIdentifier)
                _ = try insertSample(db, type: type, uuid: s.sampleUUIDHash, strict: s.strictFingerprint, semantic: s.semanticFingerprint,
                                     fuzzyKey: s.fuzzyKey, firstSeenAt: s.firstSeenAt, line: line, kind: .sample)
            case .observation(let o):
                // Observations follow one another in time: none is earlier than the chain's previous one.
                if let previous = try Double.fetchOne(db.cachedStatement(sql: "SELECT max(observed_at) FROM observations WHERE device_chain_id = ?"), arguments: [chainID]),
                   o.observedAt < previous {
                    throw BundleError(.inconsistent, line: line, "line \(line): observation: observed_at \(CanonicalDate.string(o.observedAt)) is before the previous observation's \(CanonicalDate.string(previous))")
                }
                try db.cachedStatement(sql: """
                    INSERT INTO observations(device_chain_id, observed_at, started_at, ended_at, status, trigger_reason, app_version, os_version,
                        time_zone_identifier, time_zone_seconds_from_gmt, schema_version, selected_type_set_hash, notes, samples_before, versions_before)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, (SELECT ifnull(max(id), 0) FROM samples), (SELECT ifnull(max(id), 0) FROM sample_versions))
                    """).execute(arguments: [chainID, o.observedAt, o.startedAt, o.endedAt, o.status.rawValue, o.triggerReason.rawValue, o.appVersion?.string,
                                             o.osVersion?.string, o.timeZoneIdentifier?.string, o.timeZoneSecondsFromGMT, o.schemaVersion,
                                             o.selectedTypeSetHash?.hex, o.notes?.string])
                observationID = db.lastInsertedRowID
                observedAt = o.observedAt
                outcome = .applied(observationID: observationID, sequence: header.sequence)
                sums.observed(zoneID: o.timeZoneIdentifier?.string, zoneOffset: o.timeZoneSecondsFromGMT.map { Int(truncatingIfNeeded: $0) })
            case .sampleType(let k):
                let id = try typeID(db, k.typeIdentifier)
                try db.cachedStatement(sql: "UPDATE sample_types SET display_name = coalesce(display_name, ?), category = coalesce(category, ?) WHERE id = ?")
                    .execute(arguments: [k.displayName?.string, k.category?.rawValue, id])
            case .source(let s):
                try db.cachedStatement(sql: "INSERT OR IGNORE INTO sources(source_name_hash, bundle_identifier) VALUES (?, ?)")
                    .execute(arguments: [s.sourceNameHash?.hex, s.bundleIdentifier?.string])
            case .sourceRevision(let r):
                guard let sid = try st.source.firstInt(db, [.hexText(r.source.sourceNameHash), t(r.source.bundleIdentifier)]) else {
                    throw ApplyError(code: .unresolved, message: "a source revision's source is missing")
                }
                try db.cachedStatement(sql: "INSERT OR IGNORE INTO source_revisions(source_id, product_type, version, operating_system_version) VALUES (?, ?, ?, ?)")
                    .execute(arguments: [sid, r.productType?.string, r.version?.string, r.operatingSystemVersion?.string])
            case .device(let d):
                try db.cachedStatement(sql: """
                    INSERT OR IGNORE INTO hk_devices(device_hash, manufacturer_hash, model, hardware_version, firmware_version, software_version, local_identifier_hash, udi_hash)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                    """).execute(arguments: [d.deviceHash.hex, d.manufacturerHash?.hex, d.model?.string, d.hardwareVersion?.string,
                                             d.firmwareVersion?.string, d.softwareVersion?.string, d.localIdentifierHash?.hex, d.udiHash?.hex])
            case .metadata(let m):
                try db.cachedStatement(sql: "INSERT OR IGNORE INTO metadata_blobs(metadata_hash, metadata_json) VALUES (?, ?)")
                    .execute(arguments: [m.metadataHash.hex, m.metadataJSON.string])
            case .rangeClose(let r):
                sums.rangeClosed()
                let sample = try sampleID(db, r.sample)
                let version = try versionID(db, r.payloadHash, sample: sample)
                let seq = r.firstSequence
                guard seq < Int64(header.sequence) else {
                    throw ApplyError(code: .unresolved, message: "a closed range names first_sequence \(seq), not an earlier observation of the chain")
                }
                guard let first = try st.firstObservation.firstInt(db, [.int(chainID), .int(seq - 1)]) else {
                    throw ApplyError(code: .unresolved, message: "a closed range names an observation the replica does not have")
                }
                let changed = try st.closeRange.run(db, [.int(obs), .double(r.lastSeenAt), .int(sample), .int(version), .int(first)])
                guard changed == 1 else {
                    // Which rule: no such range, a range closed already, or one closed before it opened.
                    let range = try Row.fetchOne(db.cachedStatement(sql: """
                        SELECT last_observation_id, first_seen_at FROM sample_visibility_ranges WHERE sample_id = ? AND version_id IS ? AND first_observation_id = ?
                        """), arguments: [sample, version, first])
                    guard let range else { throw ApplyError(code: .unresolved, line: line, message: "a range_close names a range the replica does not have") }
                    if (range["last_observation_id"] as Int64?) != nil {
                        throw BundleError(.reference, line: line, "line \(line): range_close: the range (opened at sequence \(seq)) is closed already")
                    }
                    throw BundleError(.inconsistent, line: line, "line \(line): range_close: last_seen_at is before the range's first_seen_at (a range cannot close before it opened)")
                }
            case .relationship(let x):
                let source = try sampleID(db, x.source), target = try sampleID(db, x.target)
                let metadata = try x.metadataHash.flatMap { try st.metadata.firstInt(db, [.hexText($0)]) }
                guard (x.metadataHash == nil) == (metadata == nil) else {
                    throw ApplyError(code: .unresolved, line: line, message: "a relationship names metadata the bundle and the replica do not have")
                }
                // A relationship is recorded once, by the observation that first saw it.
                if try Bool.fetchOne(db.cachedStatement(sql: """
                    SELECT EXISTS (SELECT 1 FROM sample_relationships WHERE source_sample_id = ? AND target_sample_id = ? AND relationship_kind = ?)
                    """), arguments: [source, target, x.relationshipKind.rawValue]) == true {
                    throw BundleError(.reference, line: line, "line \(line): relationship: the replica (or the bundle) already holds this \(x.relationshipKind.rawValue) relationship")
                }
                try db.cachedStatement(sql: "INSERT INTO sample_relationships(observation_id, source_sample_id, target_sample_id, relationship_kind, metadata_id) VALUES (?, ?, ?, ?, ?)")
                    .execute(arguments: [obs, source, target, x.relationshipKind.rawValue, metadata])
            case .typeRun(let r):
                let type = try typeID(db, r.typeIdentifier)
                // The verifier checked each anchor is standard base64.
                func blob(_ text: ItemText?) -> Data? { text.flatMap { Data(base64Encoded: Data($0.utf8)) } }
                try db.cachedStatement(sql: """
                    INSERT INTO observation_type_runs(observation_id, sample_type_id, status, started_at, ended_at, anchor_before, anchor_after,
                        inserted_event_count, deleted_event_count, verified_visible_count, error_kind, error_message_hash, run_kind, rejected_record_count)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """).execute(arguments: [obs, type, r.status.rawValue, r.startedAt, r.endedAt, blob(r.anchorBefore), blob(r.anchorAfter),
                                             r.insertedEventCount, r.deletedEventCount, r.verifiedVisibleCount, r.errorKind?.rawValue,
                                             r.errorMessageHash?.hex, r.runKind.rawValue, r.rejectedRecordCount])
            }
        }
    }
}
