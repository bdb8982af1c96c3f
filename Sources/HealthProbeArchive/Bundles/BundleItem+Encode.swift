import Foundation
import HealthProbeCanonical

extension BundleItem {
    /// Writes the item's canonical JSON (RFC 8785: members in key order, its `kind`
    /// among them) to `w`: the one encoding of every kind. The committed vectors pin
    /// it to the generic encoder's bytes (`CanonicalJSON.encode`). Returns where in `w` the
    /// payload of a `version` or `new_sample` went (the bytes its hash covers); nil for other kinds.
    @discardableResult
    public func write(to w: inout CanonicalJSONWriter) throws(HashingError) -> Range<Int>? {
        var payload: Range<Int>?
        w.beginObject()
        switch self {
        case .observation(let o):
            w.field("app_version", o.appVersion)
            w.field("ended_at", date: o.endedAt)
            w.field("kind", "observation")
            w.field("notes", o.notes)
            w.field("observed_at", date: o.observedAt)
            w.field("os_version", o.osVersion)
            try w.field("schema_version", number: o.schemaVersion)
            w.field("selected_type_set_hash", o.selectedTypeSetHash)
            w.field("started_at", date: o.startedAt)
            w.field("status", o.status)
            w.field("time_zone_identifier", o.timeZoneIdentifier)
            try w.field("time_zone_seconds_from_gmt", number: o.timeZoneSecondsFromGMT)
            w.field("trigger_reason", o.triggerReason)
        case .sampleType(let t):
            w.field("category", t.category)
            w.field("display_name", t.displayName)
            w.field("kind", "sample_type")
            w.field("type_identifier", t.typeIdentifier)
        case .source(let s):
            w.field("bundle_identifier", s.bundleIdentifier)
            w.field("kind", "source")
            w.field("source_name_hash", s.sourceNameHash)
        case .sourceRevision(let r):
            w.field("kind", "source_revision")
            w.field("operating_system_version", r.operatingSystemVersion)
            w.field("product_type", r.productType)
            w.key("source")
            w.beginObject()
            w.field("bundle_identifier", r.source.bundleIdentifier)
            w.field("source_name_hash", r.source.sourceNameHash)
            w.endObject()
            w.field("version", r.version)
        case .device(let d):
            w.field("device_hash", d.deviceHash)
            w.field("firmware_version", d.firmwareVersion)
            w.field("hardware_version", d.hardwareVersion)
            w.field("kind", "device")
            w.field("local_identifier_hash", d.localIdentifierHash)
            w.field("manufacturer_hash", d.manufacturerHash)
            w.field("model", d.model)
            w.field("software_version", d.softwareVersion)
            w.field("udi_hash", d.udiHash)
        case .metadata(let m):
            w.field("kind", "metadata")
            w.field("metadata_hash", m.metadataHash)
            w.field("metadata_json", m.metadataJSON)
        case .newSample(let n):
            w.field("fuzzy_key", n.fuzzyKey)
            w.field("kind", "new_sample")
            payload = try n.payload.writeMember(to: &w)
            w.field("sample_uuid_hash", n.sampleUUIDHash)
            w.field("semantic_fingerprint", n.semanticFingerprint)
            w.field("strict_fingerprint", n.strictFingerprint)
        case .sample(let s):
            w.field("first_seen_at", date: s.firstSeenAt)
            w.field("fuzzy_key", s.fuzzyKey)
            w.field("kind", "sample")
            w.field("sample_uuid_hash", s.sampleUUIDHash)
            w.field("semantic_fingerprint", s.semanticFingerprint)
            w.field("strict_fingerprint", s.strictFingerprint)
            w.field("type_identifier", s.typeIdentifier)
        case .version(let v):
            w.field("kind", "version")
            payload = try v.payload.writeMember(to: &w)
            w.field("payload_hash", v.payloadHash)
            w.field("sample", v.sample)
        case .event(let e):
            w.field("event_kind", e.eventKind)
            w.field("evidence_kind", e.evidenceKind)
            w.field("kind", "event")
            w.field("observed_at", date: e.observedAt)
            w.field("payload_hash", e.payloadHash)
            w.field("sample", e.sample)
        case .rangeOpen(let r):
            w.field("first_seen_at", date: r.firstSeenAt)
            w.field("kind", "range_open")
            w.field("payload_hash", r.payloadHash)
            w.field("sample", r.sample)
        case .rangeClose(let r):
            try w.field("first_sequence", number: r.firstSequence)
            w.field("kind", "range_close")
            w.field("last_seen_at", date: r.lastSeenAt)
            w.field("payload_hash", r.payloadHash)
            w.field("sample", r.sample)
        case .relationship(let x):
            w.field("kind", "relationship")
            w.field("metadata_hash", x.metadataHash)
            w.field("relationship_kind", x.relationshipKind)
            w.field("source", x.source)
            w.field("target", x.target)
        case .typeRun(let r):
            w.field("anchor_after", r.anchorAfter)
            w.field("anchor_before", r.anchorBefore)
            try w.field("deleted_event_count", number: r.deletedEventCount)
            w.field("ended_at", date: r.endedAt)
            w.field("error_kind", r.errorKind)
            w.field("error_message_hash", r.errorMessageHash)
            try w.field("inserted_event_count", number: r.insertedEventCount)
            w.field("kind", "type_run")
            try w.field("rejected_record_count", number: r.rejectedRecordCount)
            w.field("run_kind", r.runKind)
            w.field("started_at", date: r.startedAt)
            w.field("status", r.status)
            w.field("type_identifier", r.typeIdentifier)
            try w.field("verified_visible_count", number: r.verifiedVisibleCount)
        }
        w.endObject()
        return payload
    }

    /// The item's canonical bytes.
    public var canonicalBytes: [UInt8] {
        get throws(HashingError) {
            var w = CanonicalJSONWriter(capacity: 512)
            try write(to: &w)
            return w.bytes
        }
    }
}

extension BundleItem.Payload {
    /// Writes the `payload` member of an item, and returns where in `w` its value went.
    func writeMember(to w: inout CanonicalJSONWriter) throws(HashingError) -> Range<Int> {
        w.key("payload")
        let start = w.count
        try write(to: &w)
        return start..<w.count
    }

    /// The payload's canonical JSON: the bytes its `payload_hash` covers, the document
    /// `SampleEncoding.payload` writes at capture (whose hash every received bundle is checked against).
    func write(to w: inout CanonicalJSONWriter) throws(HashingError) {
        w.beginObject()
        w.field("category_value", categoryValue.map(Int.init))
        w.field("creation_date", date: creationDate)
        w.field("device_hash", deviceHash)
        try w.field("duration_seconds", durationSeconds)
        w.field("end_date", date: endDate)
        w.field("metadata_hash", metadataHash)
        try w.field("numeric_value", numericValue)
        w.key("source")
        if let source {
            w.beginObject()
            w.field("bundle_identifier", source.bundleIdentifier)
            w.field("name_hash", source.nameHash)
            w.endObject()
        } else { w.writeNull() }
        w.key("source_revision")
        if let sourceRevision {
            w.beginObject()
            w.field("operating_system_version", sourceRevision.operatingSystemVersion)
            w.field("product_type", sourceRevision.productType)
            w.field("version", sourceRevision.version)
            w.endObject()
        } else { w.writeNull() }
        w.field("start_date", date: startDate)
        w.field("type", type)
        w.field("unit", unit)
        w.field("value_kind", valueKind)
        w.field("workout_activity_type", workoutActivityType.map(Int.init))
        w.endObject()
    }
}

extension CanonicalJSONWriter {
    /// A text member (`nil` writes null).
    mutating func field(_ k: StaticString, _ v: ItemText?) {
        key(k)
        if let v { v.utf8.withUnsafeBufferPointer { writeString(utf8: $0) } } else { writeNull() }
    }

    /// A hash member as 64 lower-case hex digits (`nil` writes null).
    mutating func field(_ k: StaticString, _ v: Digest32?) {
        if let v { v.withUnsafeBytes { field(k, hex: $0) } } else { field(k, hex: nil) }
    }

    /// A date member as canonical text (`nil` writes null).
    mutating func field(_ k: StaticString, date v: Double?) {
        key(k)
        if let v { writeDate(v) } else { writeNull() }
    }

    /// A closed-set member by its name (`nil` writes null).
    mutating func field<E: RawRepresentable>(_ k: StaticString, _ v: E?) where E.RawValue == String {
        field(k, v?.rawValue)
    }

    /// An integer member written as a JSON number is (the generic encoder's form).
    mutating func field(_ k: StaticString, number v: Int64?) throws(HashingError) {
        try field(k, v.map(Double.init))
    }

    /// A sample reference: `{"strict_fingerprint":...,"type":...}`.
    mutating func field(_ k: StaticString, _ ref: BundleItem.SampleReference) {
        key(k)
        beginObject()
        field("strict_fingerprint", ref.strictFingerprint)
        field("type", ref.type)
        endObject()
    }
}
