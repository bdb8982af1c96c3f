import Foundation
import GRDB

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
    }

    /// Applies the bundle given as lines (header, items, trailer) with its manifest hash.
    /// Lines are verified on a second thread while the previous ones are applied.
    public static func apply(_ replica: Archive, lines: some Sequence<[UInt8]>, manifestHash: String, now: Double) throws -> Outcome {
        let verified = VerifiedLines(lines)
        defer { verified.cancel() }
        return try replica.writer.write { db in
            var state: State?
            while let batch = try verified.next() {
                for value in batch {
                    // The verifier decoded each line once; the applier uses that value.
                    guard case .object(let o) = value else { continue }
                    if state == nil {
                        let header = try BundleVerifier.parseHeader(o, line: 1)
                        let s = try State.begin(db, header: header, manifestHash: manifestHash, now: now)
                        if case .alreadyApplied = s.outcome { return s.outcome }
                        state = s
                        continue
                    }
                    guard case .string(let kind)? = o["kind"] else { continue }  // the trailer
                    try state!.apply(kind, o, db: db)
                }
            }
            guard let s = state else { throw BundleError(.malformed, line: nil, "the bundle is empty") }
            var verifier = verified.finish()
            _ = try verifier.finish(expected: manifestHash, previousManifestHash: .some(s.previousLogged))
            // The replica's aggregates are derived here, never carried in bundles.
            try Aggregates.update(db, observationID: s.observationID, now: now)
            try db.cachedStatement(sql: """
                INSERT INTO bundle_log(device_chain_id, sequence, observation_id, manifest_hash, previous_manifest_hash, item_count, direction, recorded_at)
                VALUES (?, ?, ?, ?, ?, ?, 'received', ?)
                """).execute(arguments: [s.chainID, s.header.sequence, s.observationID, manifestHash, s.header.previousManifestHash, verifier.itemCount, now])
            return s.outcome
        }
    }

    struct State {
        let header: BundleHeader
        let chainID: Int64
        let previousLogged: String?
        var observationID: Int64 = 0
        var outcome: Outcome
        var typeIDs: [String: Int64] = [:]
        /// The rowid the next sample reference most likely names: items of each kind
        /// follow the sender's row order, which is the order samples were inserted in.
        var sampleGuess: Int64 = 0
        var statements: Statements?

        /// The hot statements, prepared once per bundle.
        struct Statements {
            let sampleByRowid, sampleByFingerprint, versionID, source, revision, device, metadata: FastStatement
            let insertSample, insertVersion, insertEvent, openRange, closeRange, firstObservation: FastStatement

            init(_ db: Database) throws {
                sampleByRowid = try FastStatement(db, "SELECT sample_type_id, strict_fingerprint FROM samples WHERE id = ?")
                sampleByFingerprint = try FastStatement(db, "SELECT id FROM samples WHERE sample_type_id = ? AND strict_fingerprint = ?")
                versionID = try FastStatement(db, "SELECT id FROM sample_versions WHERE sample_id = ? AND payload_hash = ?")
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
                closeRange = try FastStatement(db, "UPDATE sample_visibility_ranges SET last_observation_id = ?, last_seen_at = ? WHERE sample_id = ? AND version_id IS ? AND first_observation_id = ?")
                firstObservation = try FastStatement(db, "SELECT id FROM observations WHERE device_chain_id = ? ORDER BY id LIMIT 1 OFFSET ?")
            }

            /// The first column of the first row, as an integer.
            static func id(_ db: Database, _ stmt: FastStatement, _ args: [FastStatement.Value]) throws -> Int64? {
                var id: Int64?
                try stmt.queryWhile(db, args) { row in id = row.int(0); return false }
                return id
            }
        }

        static func begin(_ db: Database, header: BundleHeader, manifestHash: String, now: Double) throws -> State {
            try db.cachedStatement(sql: "INSERT OR IGNORE INTO device_chains(device_chain_hash, created_at, recovered_from_keychain) VALUES (?, ?, 0)").execute(arguments: [header.deviceChainHash, now])
            let chainID = try Int64.fetchOne(db.cachedStatement(sql: "SELECT id FROM device_chains WHERE device_chain_hash = ?"), arguments: [header.deviceChainHash])!
            if let logged = try String.fetchOne(db, sql: "SELECT manifest_hash FROM bundle_log WHERE device_chain_id = ? AND direction = 'received' AND sequence = ?",
                                                arguments: [chainID, header.sequence]) {
                guard logged == manifestHash else {
                    throw ApplyError(code: .divergence, message: "chain \(header.deviceChainHash.prefix(16)) already has a different bundle at sequence \(header.sequence) (stored \(logged.prefix(16)), received \(manifestHash.prefix(16))): refused as divergence")
                }
                return State(header: header, chainID: chainID, previousLogged: nil, outcome: .alreadyApplied(sequence: header.sequence))
            }
            let last = try Row.fetchOne(db, sql: "SELECT sequence, manifest_hash FROM bundle_log WHERE device_chain_id = ? AND direction = 'received' ORDER BY sequence DESC LIMIT 1",
                                        arguments: [chainID])
            let lastSequence: Int = last?["sequence"] ?? 0
            guard header.sequence == lastSequence + 1 else {
                throw ApplyError(code: .outOfOrder, message: "chain \(header.deviceChainHash.prefix(16)) expects sequence \(lastSequence + 1) next, not \(header.sequence); send the missing bundles first")
            }
            var state = State(header: header, chainID: chainID, previousLogged: last?["manifest_hash"], outcome: .applied(observationID: 0, sequence: header.sequence))
            state.statements = try Statements(db)
            return state
        }

        static func date(_ v: JSONValue?) -> Double? { if case .string(let s)? = v { return CanonicalDate.parse(s) }; return nil }
        static func str(_ v: JSONValue?) -> String? { if case .string(let s)? = v { return s }; return nil }
        static func num(_ v: JSONValue?) -> Double? { if case .number(let d)? = v { return d }; return nil }
        static func int(_ v: JSONValue?) -> Int64? { num(v).map { Int64($0) } }
        static func obj(_ v: JSONValue?) -> [String: JSONValue]? { if case .object(let o)? = v { return o }; return nil }

        mutating func typeID(_ db: Database, _ type: String?) throws -> Int64 {
            guard let type else { throw ApplyError(code: .unresolved, message: "an item names no sample type") }
            if let id = typeIDs[type] { return id }
            try db.cachedStatement(sql: "INSERT OR IGNORE INTO sample_types(type_identifier) VALUES (?)").execute(arguments: [type])
            let id = try Int64.fetchOne(db.cachedStatement(sql: "SELECT id FROM sample_types WHERE type_identifier = ?"), arguments: [type])!
            typeIDs[type] = id
            return id
        }

        /// The replica's row of a sample reference (type and strict fingerprint):
        /// first the guessed next rowid (checked), else the identity index.
        mutating func sampleID(_ db: Database, _ ref: JSONValue?) throws -> Int64 {
            let r = Self.obj(ref) ?? [:]
            let t = try typeID(db, Self.str(r["type"]))
            let fp = Self.str(r["strict_fingerprint"])
            let st = statements!
            if let fp, sampleGuess > 0 {
                var hit = false
                try st.sampleByRowid.queryWhile(db, [.int(sampleGuess)]) { row in
                    hit = row.int(0) == t && row.textEquals(1, fp)
                    return false
                }
                if hit { sampleGuess += 1; return sampleGuess - 1 }
            }
            guard let id = try Statements.id(db, st.sampleByFingerprint, [.int(t), .text(fp)]) else {
                throw ApplyError(code: .unresolved, message: "an item refers to a sample the replica does not have (\(Self.str(r["type"]) ?? "?"))")
            }
            sampleGuess = id + 1
            return id
        }

        func versionID(_ db: Database, sample: Int64, payloadHash: String?) throws -> Int64? {
            guard let payloadHash else { return nil }
            guard let id = try Statements.id(db, statements!.versionID, [.int(sample), .text(payloadHash)]) else {
                throw ApplyError(code: .unresolved, message: "an item refers to a payload version the replica does not have")
            }
            return id
        }

        func sourceID(_ db: Database, _ o: [String: JSONValue]) throws -> Int64? {
            let name = Self.str(o["source_name_hash"] ?? o["name_hash"]), bundle = Self.str(o["bundle_identifier"])
            return try Statements.id(db, statements!.source, [.text(name), .text(bundle)])
        }

        mutating func apply(_ kind: String, _ o: [String: JSONValue], db: Database) throws {
            let obs = observationID
            switch kind {
            case "observation":
                try db.cachedStatement(sql: """
                    INSERT INTO observations(device_chain_id, observed_at, started_at, ended_at, status, trigger_reason, app_version, os_version,
                        time_zone_identifier, time_zone_seconds_from_gmt, schema_version, selected_type_set_hash, notes)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """).execute(arguments: [chainID, Self.date(o["observed_at"]), Self.date(o["started_at"]), Self.date(o["ended_at"]), Self.str(o["status"]),
                                     Self.str(o["trigger_reason"]), Self.str(o["app_version"]), Self.str(o["os_version"]), Self.str(o["time_zone_identifier"]),
                                     Self.int(o["time_zone_seconds_from_gmt"]), Self.int(o["schema_version"]), Self.str(o["selected_type_set_hash"]), Self.str(o["notes"])])
                observationID = db.lastInsertedRowID
                outcome = .applied(observationID: observationID, sequence: header.sequence)
            case "sample_type":
                let id = try typeID(db, Self.str(o["type_identifier"]))
                try db.cachedStatement(sql: "UPDATE sample_types SET display_name = coalesce(display_name, ?), category = coalesce(category, ?) WHERE id = ?").execute(arguments: [Self.str(o["display_name"]), Self.str(o["category"]), id])
            case "source":
                try db.cachedStatement(sql: "INSERT OR IGNORE INTO sources(source_name_hash, bundle_identifier) VALUES (?, ?)").execute(arguments: [Self.str(o["source_name_hash"]), Self.str(o["bundle_identifier"])])
            case "source_revision":
                guard let src = try sourceID(db, Self.obj(o["source"]) ?? [:]) else { throw ApplyError(code: .unresolved, message: "a source revision's source is missing") }
                try db.cachedStatement(sql: "INSERT OR IGNORE INTO source_revisions(source_id, product_type, version, operating_system_version) VALUES (?, ?, ?, ?)").execute(arguments: [src, Self.str(o["product_type"]), Self.str(o["version"]), Self.str(o["operating_system_version"])])
            case "device":
                try db.cachedStatement(sql: """
                    INSERT OR IGNORE INTO hk_devices(device_hash, manufacturer_hash, model, hardware_version, firmware_version, software_version, local_identifier_hash, udi_hash)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                    """).execute(arguments: [Self.str(o["device_hash"]), Self.str(o["manufacturer_hash"]), Self.str(o["model"]), Self.str(o["hardware_version"]),
                                     Self.str(o["firmware_version"]), Self.str(o["software_version"]), Self.str(o["local_identifier_hash"]), Self.str(o["udi_hash"])])
            case "metadata":
                try db.cachedStatement(sql: "INSERT OR IGNORE INTO metadata_blobs(metadata_hash, metadata_json) VALUES (?, ?)").execute(arguments: [Self.str(o["metadata_hash"]), Self.str(o["metadata_json"])])
            case "sample":
                let t = try typeID(db, Self.str(o["type_identifier"]))
                try statements!.insertSample.run(db, [.int(t), .text(Self.str(o["sample_uuid_hash"])), .text(Self.str(o["strict_fingerprint"])),
                                                      .text(Self.str(o["semantic_fingerprint"])), .text(Self.str(o["fuzzy_key"])), .int(obs),
                                                      .double(Self.date(o["first_seen_at"]))])
            case "version":
                let sample = try sampleID(db, o["sample"])
                let p = Self.obj(o["payload"]) ?? [:]
                let st = statements!
                var revision: Int64?
                if let src = Self.obj(p["source"]), let sid = try sourceID(db, src) {
                    let r = Self.obj(p["source_revision"]) ?? [:]
                    revision = try Statements.id(db, st.revision, [.int(sid), .text(Self.str(r["product_type"])), .text(Self.str(r["version"])),
                                                                   .text(Self.str(r["operating_system_version"]))])
                }
                let device = try Self.str(p["device_hash"]).flatMap { try Statements.id(db, st.device, [.text($0)]) }
                let metadata = try Self.str(p["metadata_hash"]).flatMap { try Statements.id(db, st.metadata, [.text($0)]) }
                try st.insertVersion.run(db, [.int(sample), .text(Self.str(o["payload_hash"])), .double(Self.date(p["start_date"])), .double(Self.date(p["end_date"])),
                                              .text(Self.str(p["value_kind"])), .double(Self.num(p["numeric_value"])), .text(Self.str(p["unit"])),
                                              .int(Self.int(p["category_value"])), .int(Self.int(p["workout_activity_type"])), .double(Self.num(p["duration_seconds"])),
                                              .int(revision), .int(device), .int(metadata), .int(obs), .double(Self.date(p["creation_date"]))])
            case "event":
                let sample = try sampleID(db, o["sample"])
                let version = try versionID(db, sample: sample, payloadHash: Self.str(o["payload_hash"]))
                try statements!.insertEvent.run(db, [.int(obs), .int(sample), .int(version), .text(Self.str(o["event_kind"])), .double(Self.date(o["observed_at"])),
                                                     .text(Self.str(o["evidence_kind"]))])
            case "range_open":
                let sample = try sampleID(db, o["sample"])
                let version = try versionID(db, sample: sample, payloadHash: Self.str(o["payload_hash"]))
                try statements!.openRange.run(db, [.int(sample), .int(version), .int(obs), .double(Self.date(o["first_seen_at"]))])
            case "range_close":
                let sample = try sampleID(db, o["sample"])
                let version = try versionID(db, sample: sample, payloadHash: Self.str(o["payload_hash"]))
                guard let seq = Self.int(o["first_sequence"]),
                      let first = try Statements.id(db, statements!.firstObservation, [.int(chainID), .int(seq - 1)]) else {
                    throw ApplyError(code: .unresolved, message: "a closed range names an observation the replica does not have")
                }
                let changed = try statements!.closeRange.run(db, [.int(obs), .double(Self.date(o["last_seen_at"])), .int(sample), .int(version), .int(first)])
                guard changed == 1 else { throw ApplyError(code: .unresolved, message: "a closed range does not match an open range of the replica") }
            case "relationship":
                let source = try sampleID(db, o["source"]), target = try sampleID(db, o["target"])
                let metadata = try Self.str(o["metadata_hash"]).flatMap { try Int64.fetchOne(db.cachedStatement(sql: "SELECT id FROM metadata_blobs WHERE metadata_hash = ?"), arguments: [$0]) }
                try db.cachedStatement(sql: "INSERT INTO sample_relationships(observation_id, source_sample_id, target_sample_id, relationship_kind, metadata_id) VALUES (?, ?, ?, ?, ?)").execute(arguments: [obs, source, target, Self.str(o["relationship_kind"]), metadata])
            case "type_run":
                let t = try typeID(db, Self.str(o["type_identifier"]))
                func blob(_ v: JSONValue?) -> Data? { Self.str(v).flatMap { Data(base64Encoded: $0) } }
                try db.cachedStatement(sql: """
                    INSERT INTO observation_type_runs(observation_id, sample_type_id, status, started_at, ended_at, anchor_before, anchor_after,
                        inserted_event_count, deleted_event_count, verified_visible_count, error_kind, error_message_hash, run_kind, rejected_record_count)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """).execute(arguments: [obs, t, Self.str(o["status"]), Self.date(o["started_at"]), Self.date(o["ended_at"]), blob(o["anchor_before"]),
                                     blob(o["anchor_after"]), Self.int(o["inserted_event_count"]) ?? 0, Self.int(o["deleted_event_count"]) ?? 0,
                                     Self.int(o["verified_visible_count"]), Self.str(o["error_kind"]), Self.str(o["error_message_hash"]),
                                     Self.str(o["run_kind"]) ?? "full_scan", Self.int(o["rejected_record_count"]) ?? 0])
            default:
                throw BundleError(.unknownKind, line: nil, "unknown item kind \(kind)")
            }
        }
    }
}
