import HealthProbeCanonical

/// The canonical JSON documents behind a sample's payload hash and strict
/// fingerprint (documented byte for byte in docs/hashing.md).
public enum SampleEncoding {
    /// Canonical payload JSON: every stored field of the version.
    /// Keys in RFC 8785 order. `BundleItem.Payload.write(to:)` writes the same document from
    /// a received version item (typed text and hashes, no `String`s); a bundle is verified by
    /// hashing that one against the `payload_hash` this one gave, so any difference between
    /// the two refuses every bundle a test syncs. Kept apart for the capture's hot path.
    public static func payload(_ n: NormalizedSample) throws(HashingError) -> [UInt8] {
        var w = CanonicalJSONWriter(capacity: 512)
        w.beginObject()
        w.field("category_value", n.categoryValue)
        w.key("creation_date"); if let c = n.creationDate { w.writeDate(c) } else { w.writeNull() }
        w.field("device_hash", n.device?.deviceHash)
        try w.field("duration_seconds", n.durationSeconds)
        w.key("end_date"); appendDate(n.endDate, &w)
        w.field("metadata_hash", n.metadataHash)
        try w.field("numeric_value", n.numericValue)
        w.key("source")
        if let s = n.source {
            w.beginObject()
            w.field("bundle_identifier", s.bundleIdentifier)
            w.field("name_hash", s.nameHash)
            w.endObject()
        } else { w.writeNull() }
        w.key("source_revision")
        if let r = n.revision {
            w.beginObject()
            w.field("operating_system_version", r.operatingSystemVersion)
            w.field("product_type", r.productType)
            w.field("version", r.version)
            w.endObject()
        } else { w.writeNull() }
        w.key("start_date"); appendDate(n.startDate, &w)
        w.field("type", n.typeIdentifier)
        w.field("unit", n.unit)
        w.field("value_kind", n.valueKind.rawValue)
        w.field("workout_activity_type", n.workoutActivityType)
        w.endObject()
        return w.bytes
    }

    /// Canonical strict-fingerprint JSON: the identifying content fields plus
    /// `occurrence`, which tells apart exact duplicates (0 for the first).
    public static func strictFingerprint(_ n: NormalizedSample, occurrence: Int) throws(HashingError) -> [UInt8] {
        var w = CanonicalJSONWriter(capacity: 384)
        w.beginObject()
        w.field("category_value", n.categoryValue)
        w.key("creation_date"); if let c = n.creationDate { w.writeDate(c) } else { w.writeNull() }
        try w.field("duration_seconds", n.durationSeconds)
        w.key("end_date"); appendDate(n.endDate, &w)
        try w.field("numeric_value", n.numericValue)
        w.field("occurrence", occurrence)
        w.field("source_bundle_hash", n.sourceBundleHash)
        w.key("start_date"); appendDate(n.startDate, &w)
        w.field("type", n.typeIdentifier)
        w.field("unit", n.unit)
        w.field("value_kind", n.valueKind.rawValue)
        w.field("workout_activity_type", n.workoutActivityType)
        w.endObject()
        return w.bytes
    }

    /// The strict fingerprint for `occurrence`: 16 hex digits of the start time
    /// (milliseconds + 2^63, big-endian) then the first 48 hex digits of the
    /// SHA-256. Time-ordered keys keep index inserts local (docs/hashing.md 6).
    public static func strictFingerprintHash(_ n: NormalizedSample, occurrence: Int) throws(HashingError) -> String {
        try strictFingerprintDigest(n, occurrence: occurrence).hex
    }

    /// `strictFingerprintHash`, held inline (the 32 bytes the archive stores).
    public static func strictFingerprintDigest(_ n: NormalizedSample, occurrence: Int) throws(HashingError) -> Digest32 {
        ArchiveHasher.sha256Digest(.strictFingerprint, try strictFingerprint(n, occurrence: occurrence), head: timePrefixValue(n.startDate))
    }

    /// `hex16(milliseconds + 2^63)`.
    public static func timePrefix(_ seconds: Double) -> String {
        ArchiveHasher.hex(timePrefixBytes(seconds))
    }

    /// `milliseconds + 2^63`: the number a fingerprint's time prefix is the big-endian hex of.
    static func timePrefixValue(_ seconds: Double) -> UInt64 {
        UInt64(bitPattern: CanonicalDate.milliseconds(seconds)) &+ (1 << 63)
    }

    /// The 8 bytes `timePrefix` is the hex of: a fingerprint's stored prefix.
    static func timePrefixBytes(_ seconds: Double) -> [UInt8] {
        let biased = timePrefixValue(seconds)
        return (0..<8).map { UInt8(truncatingIfNeeded: biased >> (56 - 8 * $0)) }
    }

    /// Strict fingerprint of a sample known only from deleted-object evidence.
    public static func deletedOnlyFingerprint(typeIdentifier: String, uuidHash: String) -> String {
        var w = CanonicalJSONWriter()
        w.beginObject()
        w.field("deleted_object_uuid_hash", uuidHash)
        w.field("type", typeIdentifier)
        w.endObject()
        return String(repeating: "0", count: 16) + ArchiveHasher.sha256(.strictFingerprint, w.bytes).prefix(48)
    }

    @inline(__always)
    static func appendDate(_ d: Double, _ w: inout CanonicalJSONWriter) { w.writeDate(d) }
}
