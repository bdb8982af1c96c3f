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
    }

    /// Applies the bundle given as lines (header, items, trailer) with its manifest hash.
    /// Lines are verified on a second thread while the previous ones are applied.
    /// `beforeCommit` runs inside the transaction once the bundle is applied; what it throws rolls everything back.
    public static func apply(_ replica: Archive, lines: some Sequence<[UInt8]>, manifestHash: String, now: Double,
                             indexes: IndexMode = .maintained,
                             beforeCommit: (Database, Outcome) throws -> Void = { _, _ in }) throws -> Outcome {
        let verified = VerifiedLines(lines)
        defer { verified.cancel() }
        do {
            return try replica.writer.write { db in
                let outcome = try applyVerified(db, verified, manifestHash: manifestHash, now: now, indexes: indexes)
                try beforeCommit(db, outcome)
                return outcome
            }
        } catch let e as DatabaseError where e.resultCode == .SQLITE_CONSTRAINT {
            // Only bundle content can break a constraint: a row the replica (or the bundle) has already.
            // SQLite's own text names tables and columns; a device is told the rule instead.
            throw BundleError(.reference, line: nil, "the bundle adds a row the replica (or the bundle) already holds")
        }
    }

    private static func applyVerified(_ db: Database, _ verified: VerifiedLines, manifestHash: String, now: Double, indexes: IndexMode) throws -> Outcome {
        var state: State?
        var deferred: DeferredIndexes?
        var number = 0
        while let batch = try verified.next() {
            for line in batch {
                number += 1
                // The verifier parsed each line once (flat); the applier reads that.
                guard state != nil else {
                    guard case .object(let o) = line.value else { continue }
                    let header = try BundleVerifier.parseHeader(o, line: 1)
                    switch try State.begin(db, header: header, manifestHash: manifestHash, now: now) {
                    case .alreadyApplied(let sequence): return .alreadyApplied(sequence: sequence)
                    case .apply(let s):
                        state = s
                        if DeferredIndexes.worthDeferring(indexes, samplesBefore: s.samplesBefore) { deferred = try DeferredIndexes.drop(db) }
                    }
                    continue
                }
                guard let k = line.find("kind") else { continue }  // the trailer
                guard let r = line.plainRange(k), let kind = BundleItemKind(line.bytes, r) else {
                    throw BundleError(.unknownKind, line: number, "line \(number): unknown item kind")
                }
                do {
                    try state!.apply(kind, line, line: number, db: db)
                } catch let e as ApplyError where e.line == nil {
                    throw ApplyError(code: e.code, line: number, message: e.message)
                } catch let e as DatabaseError where e.resultCode == .SQLITE_CONSTRAINT {
                    throw BundleError(.reference, line: number, "line \(number): the \(kind.rawValue) item adds \(State.what(kind)) the replica (or the bundle) already holds")
                }
            }
        }
        guard let s = state else { throw BundleError(.malformed, line: nil, "the bundle is empty") }
        // Before anything reads through them: the aggregates and the checks below do.
        do { try deferred?.rebuild(db) } catch let e as DatabaseError where e.resultCode == .SQLITE_CONSTRAINT {
            throw BundleError(.reference, line: nil, "the bundle adds a sample, or a version of a sample, that the replica (or the bundle) already holds: "
                              + "a sample's strict fingerprint, or a version's payload hash, shares its first 16 bytes with another's")
        }
        var verifier = verified.finish()
        _ = try verifier.finish(expected: manifestHash, previousManifestHash: .some(s.previousLogged))
        // The replica's aggregates are derived here, never carried in bundles.
        try Aggregates.update(db, observationID: s.observationID, now: now)
        // What the bundle touched must pass the replica's own checks, or nothing is stored.
        let problems = try ObservationChecks.problems(db, observationID: s.observationID, samplesAfter: s.samplesBefore)
        guard problems.isEmpty else {
            throw BundleError(.replicaCheck, line: nil, "applied, the bundle would leave the replica failing its integrity checks: "
                              + problems.joined(separator: "; "))
        }
        try db.cachedStatement(sql: """
            INSERT INTO bundle_log(device_chain_id, sequence, observation_id, manifest_hash, previous_manifest_hash, item_count, direction, recorded_at)
            VALUES (?, ?, ?, ?, ?, ?, 'received', ?)
            """).execute(arguments: [s.chainID, s.header.sequence, s.observationID, manifestHash, s.header.previousManifestHash, verifier.itemCount, now])
        return s.outcome
    }

    struct State {
        let header: BundleHeader
        let chainID: Int64
        let previousLogged: String?
        /// The largest sample rowid before this bundle's samples.
        let samplesBefore: Int64
        var observationID: Int64 = 0
        var outcome: Outcome
        /// Sample types met so far, by the UTF-8 of their identifier.
        var typeIDs: [(name: [UInt8], id: Int64)] = []
        /// The rowid the next sample reference most likely names: items of each kind
        /// follow the sender's row order, which is the order samples were inserted in.
        var sampleGuess: Int64 = 0
        /// Samples and versions this bundle inserted (its later lines name them).
        var inserted = InsertedRows()
        /// The source revision, device and metadata a version line resolved last, by
        /// the canonical bytes that named them: consecutive versions mostly share them.
        var lastRevision = LastLookup(), lastDevice = LastLookup(), lastMetadata = LastLookup()
        let st: Statements

        /// One remembered lookup: the key bytes and the id they resolved to (nil: none).
        struct LastLookup {
            private var key: [UInt8] = []
            private var id: Int64?
            private var valid = false

            /// The id of the key at `range` of `bytes`: remembered when the key is the
            /// last one's, else `resolve()`d and remembered.
            mutating func id(_ bytes: [UInt8], _ range: Range<Int>, resolve: () throws -> Int64?) rethrows -> Int64? {
                if valid && key.count == range.count
                    && key.withUnsafeBufferPointer({ k in bytes.withUnsafeBufferPointer { memcmp(k.baseAddress!, $0.baseAddress! + range.lowerBound, range.count) == 0 } }) {
                    return id
                }
                let resolved = try resolve()
                key.removeAll(keepingCapacity: true)
                key.append(contentsOf: bytes[range])
                id = resolved
                valid = true
                return resolved
            }
        }

        /// The hot statements, prepared once per bundle.
        struct Statements {
            let sampleByRowid, sampleByFingerprint, versionID, source, revision, device, metadata: FastStatement
            let insertSample, insertVersion, insertEvent, openRange, closeRange, firstObservation: FastStatement

            init(_ db: Database) throws {
                sampleByRowid = try FastStatement(db, "SELECT sample_type_id, strict_fingerprint FROM samples WHERE id = ?")
                sampleByFingerprint = try FastStatement(db, "SELECT id FROM samples WHERE sample_type_id = ?1 AND \(SampleIndexes.fingerprintMatches("strict_fingerprint", "?2"))")
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

        static func begin(_ db: Database, header: BundleHeader, manifestHash: String, now: Double) throws -> Begin {
            try db.cachedStatement(sql: "INSERT OR IGNORE INTO device_chains(device_chain_hash, created_at, recovered_from_keychain) VALUES (?, ?, 0)").execute(arguments: [header.deviceChainHash, now])
            let chainID = try Int64.fetchOne(db.cachedStatement(sql: "SELECT id FROM device_chains WHERE device_chain_hash = ?"), arguments: [header.deviceChainHash])!
            if let logged = try String.fetchOne(db.cachedStatement(sql: "SELECT manifest_hash FROM bundle_log WHERE device_chain_id = ? AND direction = 'received' AND sequence = ?"),
                                                arguments: [chainID, header.sequence]) {
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
            let samplesBefore = try Int64.fetchOne(db.cachedStatement(sql: "SELECT ifnull(max(id), 0) FROM samples")) ?? 0
            return .apply(State(header: header, chainID: chainID, previousLogged: last?["manifest_hash"], samplesBefore: samplesBefore,
                                outcome: .applied(observationID: 0, sequence: header.sequence), st: try Statements(db)))
        }

        /// A string member as a statement value: its bytes when it has no escapes.
        static func text(_ l: FlatJSON, _ key: StaticString, in parent: Int32 = -1) -> FastStatement.Value {
            guard let i = l.find(key, in: parent) else { return .text(nil) }
            if let r = l.plainRange(i) { return .slice(l.bytes, r) }
            return .text(l.string(at: i))
        }
        /// A kind member as its stored code (nil when absent or null). The verifier refused
        /// any name the kind lacks; a name that still gets here is refused, never stored.
        static func code<K: StoredCode>(_ l: FlatJSON, _ key: StaticString, _: K.Type) throws -> Int64? {
            guard let i = l.find(key), l.type(i) == .string else { return nil }
            let kind = l.plainRange(i).flatMap { K.named(l.bytes[$0]) } ?? l.string(at: i).flatMap { K(rawValue: $0) }
            guard let kind else { throw ApplyError(code: .unresolved, message: "an event names a \(key) no HealthProbe archive stores") }
            return kind.code
        }
        /// A hash member (64 lower-case hex digits) as a statement value: its stored 32 bytes.
        static func hash(_ l: FlatJSON, _ key: StaticString, in parent: Int32 = -1) -> FastStatement.Value {
            guard let i = l.find(key, in: parent) else { return .hash(nil) }
            if let r = l.plainRange(i) { return .hashSlice(l.bytes, r) }
            return .hash(l.string(at: i))
        }
        static func int(_ l: FlatJSON, _ key: StaticString, in parent: Int32 = -1) -> Int64? { l.number(key, in: parent).map { Int64($0) } }

        /// The replica's id of the sample type named by string member `index`.
        mutating func typeID(_ db: Database, _ l: FlatJSON, _ index: Int32?) throws -> Int64 {
            guard let index, let r = l.plainRange(index) else {
                guard let index, let name = l.string(at: index) else { throw ApplyError(code: .unresolved, message: "an item names no sample type") }
                return try Self.typeID(db, name)
            }
            for t in typeIDs where t.name.count == r.count {
                if t.name.withUnsafeBufferPointer({ a in l.bytes.withUnsafeBufferPointer { memcmp(a.baseAddress!, $0.baseAddress! + r.lowerBound, r.count) == 0 } }) { return t.id }
            }
            let name = Array(l.bytes[r])
            let id = try Self.typeID(db, String(decoding: name, as: UTF8.self))
            typeIDs.append((name, id))
            return id
        }

        static func typeID(_ db: Database, _ type: String) throws -> Int64 {
            try db.cachedStatement(sql: "INSERT OR IGNORE INTO sample_types(type_identifier) VALUES (?)").execute(arguments: [type])
            return try Int64.fetchOne(db.cachedStatement(sql: "SELECT id FROM sample_types WHERE type_identifier = ?"), arguments: [type])!
        }

        /// The replica's row of the sample reference `key` (type and strict
        /// fingerprint): first the guessed next rowid (checked), else the identity index.
        mutating func sampleID(_ db: Database, _ l: FlatJSON, _ key: StaticString) throws -> Int64 {
            let ref = l.object(key) ?? FlatJSON.nowhere
            let t = try typeID(db, l, l.find("type", in: ref))
            let fp = Self.hash(l, "strict_fingerprint", in: ref)
            if case .hashSlice(let bytes, let r) = fp {
                if let id = inserted.sample(type: t, fingerprint: Digest32(bytes, r)) { return id }
                if sampleGuess > 0 {
                    var hit = false
                    try st.sampleByRowid.queryWhile(db, [.int(sampleGuess)]) { row in
                        hit = row.int(0) == t && row.hashEquals(1, bytes, r)
                        return false
                    }
                    if hit { sampleGuess += 1; return sampleGuess - 1 }
                }
            }
            guard let id = try st.sampleByFingerprint.firstInt(db, [.int(t), fp]) else {
                throw ApplyError(code: .unresolved, message: "an item refers to a sample the replica does not have (\(l.string("type", in: ref) ?? "?"))")
            }
            sampleGuess = id + 1
            return id
        }

        func versionID(_ db: Database, _ l: FlatJSON, sample: Int64) throws -> Int64? {
            guard let i = l.find("payload_hash"), l.type(i) == .string else { return nil }
            if let r = l.plainRange(i), let id = inserted.version(sample: sample, payloadHash: Digest32(l.bytes, r)) { return id }
            guard let id = try st.versionID.firstInt(db, [.int(sample), Self.hash(l, "payload_hash")]) else {
                throw ApplyError(code: .unresolved, message: "an item refers to a payload version the replica does not have")
            }
            return id
        }

        /// What an item of `kind` adds, for a refusal's message.
        static func what(_ kind: BundleItemKind) -> String {
            switch kind {
            case .sample: "a sample (its strict fingerprint's first 16 bytes) that"
            case .version: "a version (its payload hash's first 16 bytes) that"
            case .event: "an event of this kind for this sample and observation that"
            case .rangeOpen: "a range that"
            case .relationship: "a relationship that"
            case .typeRun: "a second run of this type that"
            case .observation, .sampleType, .source, .sourceRevision, .device, .metadata, .rangeClose: "a row that"
            }
        }

        mutating func apply(_ kind: BundleItemKind, _ l: FlatJSON, line: Int, db: Database) throws {
            let obs = observationID
            func s(_ key: StaticString) -> String? { l.string(key) }
            func d(_ key: StaticString) -> Double? { l.date(key) }
            func i(_ key: StaticString) -> Int64? { Self.int(l, key) }
            func t(_ key: StaticString, in parent: Int32 = -1) -> FastStatement.Value { Self.text(l, key, in: parent) }
            switch kind {
            case .event:
                let sample = try sampleID(db, l, "sample")
                let version = try versionID(db, l, sample: sample)
                try st.insertEvent.run(db, [.int(obs), .int(sample), .int(version), .int(try Self.code(l, "event_kind", EventKind.self)),
                                            .double(d("observed_at")), .int(try Self.code(l, "evidence_kind", EvidenceKind.self))])
                return
            case .rangeOpen:
                let sample = try sampleID(db, l, "sample")
                let version = try versionID(db, l, sample: sample)
                try st.openRange.run(db, [.int(sample), .int(version), .int(obs), .double(d("first_seen_at"))])
                return
            case .version:
                let sample = try sampleID(db, l, "sample")
                let p = l.object("payload") ?? FlatJSON.nowhere
                var revision: Int64?
                if let src = l.object("source", in: p) {
                    let rev = l.object("source_revision", in: p)
                    // The source and revision objects' canonical bytes (adjacent in key order) name both.
                    let a = l.valueRange(src), b = rev.map { l.valueRange($0) } ?? a
                    revision = try lastRevision.id(l.bytes, min(a.lowerBound, b.lowerBound)..<max(a.upperBound, b.upperBound)) {
                        guard let sid = try st.source.firstInt(db, [t("name_hash", in: src), t("bundle_identifier", in: src)]) else { return nil }
                        let r = rev ?? FlatJSON.nowhere
                        return try st.revision.firstInt(db, [.int(sid), t("product_type", in: r), t("version", in: r), t("operating_system_version", in: r)])
                    }
                    guard revision != nil else { throw ApplyError(code: .unresolved, message: "a version names a source revision the bundle and the replica do not have") }
                }
                let device = l.find("device_hash", in: p).flatMap { l.type($0) == .string ? $0 : nil }
                let deviceID = try device.flatMap { d in try lastDevice.id(l.bytes, l.valueRange(d)) { try st.device.firstInt(db, [t("device_hash", in: p)]) } }
                let meta = l.find("metadata_hash", in: p).flatMap { l.type($0) == .string ? $0 : nil }
                let metadataID = try meta.flatMap { m in try lastMetadata.id(l.bytes, l.valueRange(m)) { try st.metadata.firstInt(db, [t("metadata_hash", in: p)]) } }
                guard (device == nil) == (deviceID == nil) else { throw ApplyError(code: .unresolved, message: "a version names a device the bundle and the replica do not have") }
                guard (meta == nil) == (metadataID == nil) else { throw ApplyError(code: .unresolved, message: "a version names metadata the bundle and the replica do not have") }
                let payloadHash = Self.hash(l, "payload_hash")
                try st.insertVersion.run(db, [.int(sample), payloadHash, .double(l.date("start_date", in: p)), .double(l.date("end_date", in: p)),
                                              t("value_kind", in: p), .double(l.number("numeric_value", in: p)), t("unit", in: p),
                                              .int(Self.int(l, "category_value", in: p)), .int(Self.int(l, "workout_activity_type", in: p)),
                                              .double(l.number("duration_seconds", in: p)), .int(revision), .int(deviceID), .int(metadataID), .int(obs),
                                              .double(l.date("creation_date", in: p))])
                if case .hashSlice(let bytes, let r) = payloadHash {
                    inserted.inserted(version: db.lastInsertedRowID, sample: sample, payloadHash: Digest32(bytes, r))
                }
                return
            case .sample:
                let type = try typeID(db, l, l.find("type_identifier"))
                let fingerprint = Self.hash(l, "strict_fingerprint")
                // The same sample twice in one bundle, found by its line whatever the indexes do.
                if case .hashSlice(let bytes, let r) = fingerprint, inserted.sample(type: type, fingerprint: Digest32(bytes, r)) != nil {
                    throw BundleError(.reference, line: line, "line \(line): the sample item adds \(Self.what(.sample)) the bundle already holds")
                }
                try st.insertSample.run(db, [.int(type), Self.hash(l, "sample_uuid_hash"), fingerprint, Self.hash(l, "semantic_fingerprint"), t("fuzzy_key"),
                                             .int(obs), .double(d("first_seen_at"))])
                if case .hashSlice(let bytes, let r) = fingerprint {
                    inserted.inserted(sample: db.lastInsertedRowID, type: type, fingerprint: Digest32(bytes, r))
                }
                return
            case .observation:
                // Observations follow one another in time: none is earlier than the chain's previous one.
                if let previous = try Double.fetchOne(db.cachedStatement(sql: "SELECT max(observed_at) FROM observations WHERE device_chain_id = ?"), arguments: [chainID]),
                   let at = d("observed_at"), at < previous {
                    throw BundleError(.inconsistent, line: line, "line \(line): observation: observed_at \(CanonicalDate.string(at)) is before the previous observation's \(CanonicalDate.string(previous))")
                }
                try db.cachedStatement(sql: """
                    INSERT INTO observations(device_chain_id, observed_at, started_at, ended_at, status, trigger_reason, app_version, os_version,
                        time_zone_identifier, time_zone_seconds_from_gmt, schema_version, selected_type_set_hash, notes, samples_before, versions_before)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, (SELECT ifnull(max(id), 0) FROM samples), (SELECT ifnull(max(id), 0) FROM sample_versions))
                    """).execute(arguments: [chainID, d("observed_at"), d("started_at"), d("ended_at"), s("status"), s("trigger_reason"), s("app_version"),
                                             s("os_version"), s("time_zone_identifier"), i("time_zone_seconds_from_gmt"), i("schema_version"),
                                             s("selected_type_set_hash"), s("notes")])
                observationID = db.lastInsertedRowID
                outcome = .applied(observationID: observationID, sequence: header.sequence)
            case .sampleType:
                let id = try typeID(db, l, l.find("type_identifier"))
                try db.cachedStatement(sql: "UPDATE sample_types SET display_name = coalesce(display_name, ?), category = coalesce(category, ?) WHERE id = ?").execute(arguments: [s("display_name"), s("category"), id])
            case .source:
                try db.cachedStatement(sql: "INSERT OR IGNORE INTO sources(source_name_hash, bundle_identifier) VALUES (?, ?)").execute(arguments: [s("source_name_hash"), s("bundle_identifier")])
            case .sourceRevision:
                let src = l.object("source") ?? FlatJSON.nowhere
                guard let sid = try st.source.firstInt(db, [t("source_name_hash", in: src), t("bundle_identifier", in: src)]) else {
                    throw ApplyError(code: .unresolved, message: "a source revision's source is missing")
                }
                try db.cachedStatement(sql: "INSERT OR IGNORE INTO source_revisions(source_id, product_type, version, operating_system_version) VALUES (?, ?, ?, ?)").execute(arguments: [sid, s("product_type"), s("version"), s("operating_system_version")])
            case .device:
                try db.cachedStatement(sql: """
                    INSERT OR IGNORE INTO hk_devices(device_hash, manufacturer_hash, model, hardware_version, firmware_version, software_version, local_identifier_hash, udi_hash)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                    """).execute(arguments: [s("device_hash"), s("manufacturer_hash"), s("model"), s("hardware_version"),
                                             s("firmware_version"), s("software_version"), s("local_identifier_hash"), s("udi_hash")])
            case .metadata:
                try db.cachedStatement(sql: "INSERT OR IGNORE INTO metadata_blobs(metadata_hash, metadata_json) VALUES (?, ?)").execute(arguments: [s("metadata_hash"), s("metadata_json")])
            case .rangeClose:
                let sample = try sampleID(db, l, "sample")
                let version = try versionID(db, l, sample: sample)
                guard let seq = i("first_sequence"), seq < header.sequence else {
                    throw ApplyError(code: .unresolved, message: "a closed range names first_sequence \(i("first_sequence") ?? 0), not an earlier observation of the chain")
                }
                guard let first = try st.firstObservation.firstInt(db, [.int(chainID), .int(seq - 1)]) else {
                    throw ApplyError(code: .unresolved, message: "a closed range names an observation the replica does not have")
                }
                let changed = try st.closeRange.run(db, [.int(obs), .double(d("last_seen_at")), .int(sample), .int(version), .int(first)])
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
            case .relationship:
                let source = try sampleID(db, l, "source"), target = try sampleID(db, l, "target")
                let hash = s("metadata_hash")
                let metadata = try hash.flatMap { try st.metadata.firstInt(db, [.text($0)]) }
                guard (hash == nil) == (metadata == nil) else { throw ApplyError(code: .unresolved, line: line, message: "a relationship names metadata the bundle and the replica do not have") }
                // A relationship is recorded once, by the observation that first saw it.
                if try Bool.fetchOne(db.cachedStatement(sql: """
                    SELECT EXISTS (SELECT 1 FROM sample_relationships WHERE source_sample_id = ? AND target_sample_id = ? AND relationship_kind = ?)
                    """), arguments: [source, target, s("relationship_kind")]) == true {
                    throw BundleError(.reference, line: line, "line \(line): relationship: the replica (or the bundle) already holds this \(s("relationship_kind") ?? "") relationship")
                }
                try db.cachedStatement(sql: "INSERT INTO sample_relationships(observation_id, source_sample_id, target_sample_id, relationship_kind, metadata_id) VALUES (?, ?, ?, ?, ?)").execute(arguments: [obs, source, target, s("relationship_kind"), metadata])
            case .typeRun:
                let type = try typeID(db, l, l.find("type_identifier"))
                func blob(_ key: StaticString) -> Data? { s(key).flatMap { Data(base64Encoded: $0) } }
                try db.cachedStatement(sql: """
                    INSERT INTO observation_type_runs(observation_id, sample_type_id, status, started_at, ended_at, anchor_before, anchor_after,
                        inserted_event_count, deleted_event_count, verified_visible_count, error_kind, error_message_hash, run_kind, rejected_record_count)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """).execute(arguments: [obs, type, s("status"), d("started_at"), d("ended_at"), blob("anchor_before"), blob("anchor_after"),
                                             i("inserted_event_count") ?? 0, i("deleted_event_count") ?? 0, i("verified_visible_count"), s("error_kind"),
                                             s("error_message_hash"), s("run_kind") ?? "full_scan", i("rejected_record_count") ?? 0])
            }
        }
    }
}
