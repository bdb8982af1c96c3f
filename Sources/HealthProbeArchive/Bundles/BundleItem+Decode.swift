import Foundation
import HealthProbeCanonical

extension BundleItem {
    /// The one decode of an item line: its members checked against its kind's schema
    /// (`BundleItemSchema`), read into the kind's typed payload, then its own hashes
    /// (a version's payload hash, a metadata hash) and the rules between its members
    /// (Protocol/bundles.md sections 4.1 and 4.2) checked on the typed values.
    static func decode(_ o: FlatJSON, kind: BundleItemKind, line: Int) throws(BundleError) -> BundleItem {
        try BundleItemSchema.check(kind, o, line: line)
        var r = Reader(o: o, line: line, kind: kind)
        let item: BundleItem
        /// A version's payload: the bytes its hash covers.
        var payloadBytes = 0..<0
        switch kind {
        case .observation:
            item = .observation(Observation(
                appVersion: try r.optionalText("app_version"), endedAt: try r.optionalDate("ended_at"), notes: try r.optionalText("notes"),
                observedAt: try r.date("observed_at"), osVersion: try r.optionalText("os_version"), schemaVersion: try r.int("schema_version"),
                selectedTypeSetHash: try r.optionalHash("selected_type_set_hash"), startedAt: try r.optionalDate("started_at"),
                status: try r.value("status"), timeZoneIdentifier: try r.optionalText("time_zone_identifier"),
                timeZoneSecondsFromGMT: try r.optionalInt("time_zone_seconds_from_gmt"), triggerReason: try r.value("trigger_reason")))
        case .sampleType:
            item = .sampleType(SampleType(category: try r.optionalValue("category"), displayName: try r.optionalText("display_name"),
                                          typeIdentifier: try r.text("type_identifier")))
        case .source:
            item = .source(Source(bundleIdentifier: try r.optionalText("bundle_identifier"), sourceNameHash: try r.optionalHash("source_name_hash")))
        case .sourceRevision:
            let s = try r.object("source")
            item = .sourceRevision(SourceRevision(
                operatingSystemVersion: try r.optionalText("operating_system_version"), productType: try r.optionalText("product_type"),
                source: Source(bundleIdentifier: try r.optionalText("bundle_identifier", in: s), sourceNameHash: try r.optionalHash("source_name_hash", in: s)),
                version: try r.optionalText("version")))
        case .device:
            item = .device(Device(
                deviceHash: try r.hash("device_hash"), firmwareVersion: try r.optionalText("firmware_version"),
                hardwareVersion: try r.optionalText("hardware_version"), localIdentifierHash: try r.optionalHash("local_identifier_hash"),
                manufacturerHash: try r.optionalHash("manufacturer_hash"), model: try r.optionalText("model"),
                softwareVersion: try r.optionalText("software_version"), udiHash: try r.optionalHash("udi_hash")))
        case .metadata:
            item = .metadata(Metadata(metadataHash: try r.hash("metadata_hash"), metadataJSON: try r.text("metadata_json")))
        case .sample:
            item = .sample(Sample(
                firstSeenAt: try r.date("first_seen_at"), fuzzyKey: try r.optionalText("fuzzy_key"), sampleUUIDHash: try r.optionalHash("sample_uuid_hash"),
                semanticFingerprint: try r.optionalHash("semantic_fingerprint"), strictFingerprint: try r.hash("strict_fingerprint"),
                typeIdentifier: try r.text("type_identifier")))
        case .newSample:
            let fuzzyKey = try r.optionalText("fuzzy_key")
            let p = try r.object("payload")
            payloadBytes = o.valueRange(p)
            let payload = try r.payload(p)
            // The hash is no member: it is the payload's, computed over its canonical bytes as they arrived.
            let hash = o.bytes.withUnsafeBytes { ArchiveHasher.sha256Digest(.payload, buffer: UnsafeRawBufferPointer(rebasing: $0[payloadBytes])) }
            item = .newSample(NewSample(fuzzyKey: fuzzyKey, payload: payload, payloadHash: hash, sampleUUIDHash: try r.optionalHash("sample_uuid_hash"),
                                        semanticFingerprint: try r.optionalHash("semantic_fingerprint"), strictFingerprint: try r.hash("strict_fingerprint")))
        case .version:
            let p = try r.object("payload")
            payloadBytes = o.valueRange(p)
            let payload = try r.payload(p)
            item = .version(Version(payload: payload, payloadHash: try r.hash("payload_hash"), sample: try r.reference("sample")))
        case .event:
            item = .event(Event(eventKind: try r.value("event_kind"), evidenceKind: try r.value("evidence_kind"), observedAt: try r.date("observed_at"),
                                payloadHash: try r.optionalHash("payload_hash"), sample: try r.reference("sample")))
        case .rangeOpen:
            item = .rangeOpen(RangeOpen(firstSeenAt: try r.date("first_seen_at"), payloadHash: try r.optionalHash("payload_hash"), sample: try r.reference("sample")))
        case .rangeClose:
            item = .rangeClose(RangeClose(firstSequence: try r.int("first_sequence"), lastSeenAt: try r.date("last_seen_at"),
                                          payloadHash: try r.optionalHash("payload_hash"), sample: try r.reference("sample")))
        case .relationship:
            item = .relationship(Relationship(metadataHash: try r.optionalHash("metadata_hash"), relationshipKind: try r.value("relationship_kind"),
                                              source: try r.reference("source"), target: try r.reference("target")))
        case .typeRun:
            item = .typeRun(TypeRun(
                anchorAfter: try r.optionalText("anchor_after"), anchorBefore: try r.optionalText("anchor_before"),
                deletedEventCount: try r.int("deleted_event_count"), endedAt: try r.optionalDate("ended_at"),
                errorKind: try r.optionalValue("error_kind"), errorMessageHash: try r.optionalHash("error_message_hash"),
                insertedEventCount: try r.int("inserted_event_count"), rejectedRecordCount: try r.int("rejected_record_count"),
                runKind: try r.value("run_kind"), startedAt: try r.optionalDate("started_at"), status: try r.value("status"),
                typeIdentifier: try r.text("type_identifier"), verifiedVisibleCount: try r.optionalInt("verified_visible_count")))
        }
        try item.checkMeaning(line: line)
        // The hashes an item carries over its own content.
        switch item {
        case .version(let v):
            // Over the payload's canonical bytes, as they arrived.
            let computed = o.bytes.withUnsafeBytes { ArchiveHasher.sha256Digest(.payload, buffer: UnsafeRawBufferPointer(rebasing: $0[payloadBytes])) }
            guard computed == v.payloadHash else { throw BundleError(.payloadHash, line: line, "line \(line): payload_hash does not match the payload") }
        case .newSample:
            break
        case .metadata(let m):
            guard ArchiveHasher.sha256Digest(.metadata, Array(m.metadataJSON.utf8)) == m.metadataHash else {
                throw BundleError(.metadataHash, line: line, "line \(line): metadata_hash does not match metadata_json")
            }
        case .observation, .sampleType, .source, .sourceRevision, .device, .sample, .event, .rangeOpen, .rangeClose, .relationship, .typeRun:
            break
        }
        return item
    }

    /// The rules between the members of one item (Protocol/bundles.md section 4.2).
    func checkMeaning(line: Int) throws(BundleError) {
        func fail(_ why: String) -> BundleError { BundleError(.field, line: line, "line \(line): \(kind.rawValue): \(why)") }
        func startNotAfterEnd(_ start: Double?, _ end: Double?) throws(BundleError) {
            if let start, let end, end < start { throw fail("ended_at is before started_at") }
        }
        switch self {
        case .newSample(let n):
            guard (n.payload.source == nil) == (n.payload.sourceRevision == nil) else {
                throw fail("payload.source and payload.source_revision must both be null or both be objects")
            }
        case .version(let v):
            // The payload names the sample's own type.
            guard v.payload.type == v.sample.type else { throw fail("payload.type differs from sample.type") }
            // A source and its revision come together.
            guard (v.payload.source == nil) == (v.payload.sourceRevision == nil) else {
                throw fail("payload.source and payload.source_revision must both be null or both be objects")
            }
        case .event(let e):
            switch e.eventKind {
            case .appeared, .representationChanged:
                guard e.evidenceKind == .reported, e.payloadHash != nil else {
                    throw fail("an appeared or representation_changed event has evidence_kind reported and a payload_hash")
                }
            case .disappeared:
                guard e.evidenceKind == .fullScanAbsent || e.evidenceKind == .deletedObject else {
                    throw fail("a disappeared event has evidence_kind full_scan_absent or hk_deleted_object")
                }
            case .deletedObject:
                guard e.evidenceKind == .deletedObject, e.payloadHash == nil else {
                    throw fail("a deleted_object event has evidence_kind hk_deleted_object and payload_hash null")
                }
            }
        case .typeRun(let t):
            if t.errorKind != nil, t.status != .failed, t.status != .unauthorized {
                throw fail("error_kind is set but status is not failed or unauthorized")
            }
            // A run that completed counted what it left visible; any other did not.
            let completed = t.status == .completed || t.status == .needsReview
            if completed && t.verifiedVisibleCount == nil { throw fail("verified_visible_count is null but status is \(t.status.rawValue)") }
            if !completed && t.verifiedVisibleCount != nil {
                throw fail("verified_visible_count is set but status is \(t.status.rawValue) (only a completed or needs_review run counts)")
            }
            try startNotAfterEnd(t.startedAt, t.endedAt)
        case .observation(let o):
            try startNotAfterEnd(o.startedAt, o.endedAt)
        case .sampleType, .source, .sourceRevision, .device, .metadata, .sample, .rangeOpen, .rangeClose, .relationship:
            break
        }
    }

    /// Reads the members of one item whose schema was checked: a member missing or of
    /// another type here is an error still (never a trap), though the schema let none through.
    private struct Reader {
        let o: FlatJSON
        let line: Int
        let kind: BundleItemKind
        /// Where the next member is looked for first: after the last one read (members are
        /// mostly read in their canonical order).
        var hint: Int32 = 0

        func fail(_ key: StaticString, _ why: String) -> BundleError {
            BundleError(.field, line: line, "line \(line): \(kind.rawValue).\(key) \(why)")
        }

        /// Member `key` of the object at `parent`; nil when it is null.
        mutating func member(_ key: StaticString, in parent: Int32) throws(BundleError) -> Int32? {
            guard let i = o.find(key, in: parent, from: hint) else { throw fail(key, "is missing") }
            hint = i + 1
            return o.type(i) == .null ? nil : i
        }

        mutating func optionalText(_ key: StaticString, in parent: Int32 = -1) throws(BundleError) -> ItemText? {
            guard let i = try member(key, in: parent) else { return nil }
            if let r = o.plainRange(i) { return ItemText(utf8: o.bytes[r]) }
            guard let s = o.string(at: i) else { throw fail(key, "must be a string") }
            return ItemText(s)
        }
        mutating func text(_ key: StaticString, in parent: Int32 = -1) throws(BundleError) -> ItemText {
            guard let t = try optionalText(key, in: parent) else { throw fail(key, "must be a string") }
            return t
        }

        mutating func optionalHash(_ key: StaticString, in parent: Int32 = -1) throws(BundleError) -> Digest32? {
            guard let i = try member(key, in: parent) else { return nil }
            guard let r = o.plainRange(i), let d = Digest32(o.bytes, r) else { throw fail(key, "must be 64 lower-case hex digits") }
            return d
        }
        mutating func hash(_ key: StaticString, in parent: Int32 = -1) throws(BundleError) -> Digest32 {
            guard let d = try optionalHash(key, in: parent) else { throw fail(key, "must be 64 lower-case hex digits") }
            return d
        }

        mutating func optionalDate(_ key: StaticString, in parent: Int32 = -1) throws(BundleError) -> Double? {
            guard let i = try member(key, in: parent) else { return nil }
            guard let r = o.plainRange(i),
                  let d = o.bytes.withUnsafeBufferPointer({ CanonicalDate.parse(bytes: UnsafeBufferPointer(rebasing: $0[r])) }) else {
                throw fail(key, "must be a canonical date")
            }
            return d
        }
        mutating func date(_ key: StaticString, in parent: Int32 = -1) throws(BundleError) -> Double {
            guard let d = try optionalDate(key, in: parent) else { throw fail(key, "must be a canonical date") }
            return d
        }

        mutating func optionalNumber(_ key: StaticString, in parent: Int32 = -1) throws(BundleError) -> Double? {
            guard let i = try member(key, in: parent) else { return nil }
            guard o.type(i) == .number else { throw fail(key, "must be a number") }
            return o.number(at: i)
        }
        /// An integer: the schema bounded it inside 2^53, where every double converts exactly.
        mutating func optionalInt(_ key: StaticString, in parent: Int32 = -1) throws(BundleError) -> Int64? {
            guard let d = try optionalNumber(key, in: parent) else { return nil }
            guard let v = Int64(exactly: d) else { throw fail(key, "must be an integer") }
            return v
        }
        mutating func int(_ key: StaticString, in parent: Int32 = -1) throws(BundleError) -> Int64 {
            guard let v = try optionalInt(key, in: parent) else { throw fail(key, "must be an integer") }
            return v
        }

        mutating func optionalValue<E: ItemName>(_ key: StaticString, in parent: Int32 = -1) throws(BundleError) -> E? {
            guard let i = try member(key, in: parent) else { return nil }
            guard let r = o.plainRange(i), let v = E.item(named: o.bytes[r]) else { throw fail(key, "must be one of " + E.itemNameList) }
            return v
        }
        mutating func value<E: ItemName>(_ key: StaticString, in parent: Int32 = -1) throws(BundleError) -> E {
            guard let v: E = try optionalValue(key, in: parent) else { throw fail(key, "must be one of " + E.itemNameList) }
            return v
        }

        mutating func optionalObject(_ key: StaticString, in parent: Int32 = -1) throws(BundleError) -> Int32? {
            guard let i = try member(key, in: parent) else { return nil }
            guard o.type(i) == .object else { throw fail(key, "must be an object") }
            return i
        }
        mutating func object(_ key: StaticString, in parent: Int32 = -1) throws(BundleError) -> Int32 {
            guard let i = try optionalObject(key, in: parent) else { throw fail(key, "must be an object") }
            return i
        }

        /// The payload object at `p` (a `version`'s or a `new_sample`'s).
        mutating func payload(_ p: Int32) throws(BundleError) -> Payload {
            let source = try optionalObject("source", in: p), revision = try optionalObject("source_revision", in: p)
            return Payload(
                categoryValue: try optionalInt("category_value", in: p), creationDate: try optionalDate("creation_date", in: p),
                deviceHash: try optionalHash("device_hash", in: p), durationSeconds: try optionalNumber("duration_seconds", in: p),
                endDate: try date("end_date", in: p), metadataHash: try optionalHash("metadata_hash", in: p),
                numericValue: try optionalNumber("numeric_value", in: p),
                source: try source.map { s throws(BundleError) in
                    PayloadSource(bundleIdentifier: try optionalText("bundle_identifier", in: s), nameHash: try optionalHash("name_hash", in: s))
                },
                sourceRevision: try revision.map { v throws(BundleError) in
                    PayloadRevision(operatingSystemVersion: try optionalText("operating_system_version", in: v),
                                    productType: try optionalText("product_type", in: v), version: try optionalText("version", in: v))
                },
                startDate: try date("start_date", in: p), type: try text("type", in: p), unit: try optionalText("unit", in: p),
                valueKind: try value("value_kind", in: p), workoutActivityType: try optionalInt("workout_activity_type", in: p))
        }

        mutating func reference(_ key: StaticString) throws(BundleError) -> SampleReference {
            let i = try object(key)
            return SampleReference(strictFingerprint: try hash("strict_fingerprint", in: i), type: try text("type", in: i))
        }
    }
}
