import Foundation
import HealthProbeCanonical

/// A sample's values exactly as the archive stores them, with every hash
/// computed from those same values (database-design.md 6.2, 6.4).
public struct NormalizedSample: Sendable {
    public struct Source: Sendable, Hashable {
        public var nameHash: String?
        public var bundleIdentifier: String?
    }
    public struct Revision: Sendable, Hashable {
        public var productType: String?
        public var version: String?
        public var operatingSystemVersion: String?
    }
    public struct Device: Sendable, Hashable {
        public var deviceHash: String
        public var manufacturerHash: String?
        public var model: String?
        public var hardwareVersion: String?
        public var firmwareVersion: String?
        public var softwareVersion: String?
        public var localIdentifierHash: String?
        public var udiHash: String?
    }

    public var typeIdentifier: String
    /// HMAC of the HealthKit UUID, held inline (`uuidHash` is its hex).
    public var uuidDigest: Digest32?
    public var startDate: Double
    public var endDate: Double
    public var creationDate: Double?
    public var valueKind: ValueKind
    public var numericValue: Double?
    public var unit: String?
    public var categoryValue: Int?
    public var workoutActivityType: Int?
    public var durationSeconds: Double?
    public var source: Source?
    public var revision: Revision?
    public var device: Device?
    public var metadataJSON: String?
    public var metadataHash: String?
    public var sourceBundleHash: String?
    /// The semantic fingerprint, or the time window it is computed from when asked.
    public var semantic: Semantic?
    /// The payload hash, held inline (`payloadHash` is its hex).
    public var payloadDigest: Digest32
    /// The strict fingerprint for occurrence 0 (the first of identical samples),
    /// computed with the other hashes, off the writing thread.
    public var strictFingerprintDigest: Digest32

    /// The UUID hash as 64 lower-case hex digits.
    public var uuidHash: String? { uuidDigest?.hex }
    /// The payload hash as 64 lower-case hex digits.
    public var payloadHash: String { payloadDigest.hex }
    /// The strict fingerprint (occurrence 0) as 64 lower-case hex digits.
    public var strictFingerprint: String { strictFingerprintDigest.hex }

    /// Where the semantic fingerprint comes from. A window's is computed only when
    /// read: only a new sample identity stores it, and most samples of a re-import
    /// are found, not new.
    public enum Semantic: Sendable {
        /// Computed (from a semantic key).
        case fingerprint(String)
        /// A finite time window (checked when normalized).
        case window(SemanticWindow)
    }

    /// `hp:v2:semantic_fingerprint:` SHA-256 of `{"key":...,"type":...}`, or nil without a key or window.
    public var semanticFingerprint: String? {
        switch semantic {
        case .fingerprint(let f): f
        case .window(let w): SampleNormalizer.semanticFingerprint(type: typeIdentifier, window: w)
        case nil: nil
        }
    }
}

/// Turns raw `CapturedSample`s into `NormalizedSample`s. Keeps small,
/// bounded memos of source and device normalization (HMACs are costly and
/// sources repeat). Not thread-safe: one per capture session.
public final class SampleNormalizer {
    public let hasher: ArchiveHasher
    private var sourceMemo: [SourceDescriptor: (NormalizedSample.Source, NormalizedSample.Revision, String?)?] = [:]
    private var deviceMemo: [DeviceDescriptor: NormalizedSample.Device?] = [:]
    /// Canonical JSON and hash of metadata dictionaries: records repeat a few
    /// (time zone, motion context), and encoding and hashing them is costly.
    private var metadataMemo: [[String: JSONValue]: (json: String, hash: String)] = [:]
    /// The last source and device normalized: samples come in runs of one source and
    /// device, and comparing with the last (the same strings, mostly) costs less than
    /// hashing them for the memos.
    private var lastSource: (SourceDescriptor, (NormalizedSample.Source, NormalizedSample.Revision, String?)?)?
    private var lastDevice: (DeviceDescriptor, NormalizedSample.Device?)?

    public init(hasher: ArchiveHasher) { self.hasher = hasher }

    /// Trims; empty becomes absent.
    @inline(__always)
    static func clean(_ s: String?) -> String? {
        guard let s else { return nil }
        let u = s.utf8
        guard let first = u.first, let last = u.last else { return nil }
        if !isSpace(first) && !isSpace(last) { return s }
        let t = s.trimmingCharacters(in: .whitespacesAndNewlines)
        return t.isEmpty ? nil : t
    }

    @inline(__always)
    private static func isSpace(_ b: UInt8) -> Bool { b == 0x20 || (b >= 0x09 && b <= 0x0D) || b >= 0x80 }

    /// `s.uppercased()`, without a new string when `s` has no lower-case ASCII letter
    /// and is all ASCII (HealthKit writes UUIDs in upper case).
    @inline(__always)
    static func uppercasedASCII(_ s: String) -> String {
        for b in s.utf8 where (b &- 0x61) < 26 || b >= 0x80 { return s.uppercased() }
        return s
    }

    /// OS versions: unknown ones (`0`, `0.0`, `0.0.0`) are absent.
    static func cleanOSVersion(_ s: String?) -> String? {
        guard let v = clean(s) else { return nil }
        if v.allSatisfy({ $0 == "0" || $0 == "." }) { return nil }
        return v
    }

    /// Normalizes one sample of `typeIdentifier`.
    public func normalize(_ sample: CapturedSample, typeIdentifier: String) throws(ArchiveError) -> NormalizedSample {
        guard sample.startDate.isFinite, sample.endDate.isFinite else {
            throw ArchiveError(.invalidInput, "a \(typeIdentifier) sample has a non-finite date")
        }
        let start = CanonicalDate.normalize(sample.startDate)
        let end = CanonicalDate.normalize(sample.endDate)
        // Only dates a bundle may carry: a sample the server would refuse would stop the chain's syncs.
        guard BundleItemSchema.holds(date: start), BundleItemSchema.holds(date: end), sample.creationDate.map(BundleItemSchema.holds) ?? true else {
            throw ArchiveError(.invalidInput, "a \(typeIdentifier) sample has a date that \(BundleItemSchema.dateNotHeld)")
        }
        guard end >= start else {
            throw ArchiveError(.invalidInput, "a \(typeIdentifier) sample ends before it starts")
        }
        if let v = sample.numericValue, !v.isFinite {
            throw ArchiveError(.invalidInput, "a \(typeIdentifier) sample has a non-finite value")
        }
        if let c = sample.creationDate, !c.isFinite {
            throw ArchiveError(.invalidInput, "a \(typeIdentifier) sample has a non-finite creation date")
        }
        if let d = sample.durationSeconds, !d.isFinite {
            throw ArchiveError(.invalidInput, "a \(typeIdentifier) sample has a non-finite duration")
        }
        var n = NormalizedSample(
            typeIdentifier: typeIdentifier,
            uuidDigest: Self.clean(sample.uuid).map { hasher.hmacDigest(.sampleUUID, Self.uppercasedASCII($0)) },
            startDate: start, endDate: end, creationDate: sample.creationDate.map(CanonicalDate.normalize), valueKind: sample.valueKind,
            numericValue: sample.numericValue.map { $0 == 0 ? 0 : $0 },
            unit: Self.clean(sample.unit), categoryValue: sample.categoryValue,
            workoutActivityType: sample.workoutActivityType, durationSeconds: sample.durationSeconds,
            source: nil, revision: nil, device: nil, metadataJSON: nil, metadataHash: nil,
            sourceBundleHash: nil, semantic: nil, payloadDigest: .zero, strictFingerprintDigest: .zero)
        if let s = sample.source, let (source, revision, bundleHash) = normalizeSource(s) {
            n.source = source
            n.revision = revision
            n.sourceBundleHash = bundleHash
        }
        if let d = sample.device {
            if let last = lastDevice, last.0 == d {
                n.device = last.1
            } else if let memo = deviceMemo[d] {
                n.device = memo
                lastDevice = (d, memo)
            } else {
                let device = try normalizeDevice(d)
                if deviceMemo.count > 4096 { deviceMemo.removeAll() }
                deviceMemo[d] = device
                n.device = device
                lastDevice = (d, device)
            }
        }
        if let m = sample.metadata, !m.isEmpty {
            if let memo = metadataMemo[m] {
                n.metadataJSON = memo.json
                n.metadataHash = memo.hash
            } else {
                let bytes: [UInt8]
                do { bytes = try CanonicalJSON.encode(.object(m)) } catch {
                    throw ArchiveError(.invalidInput, "a \(typeIdentifier) sample has metadata that cannot be encoded canonically", cause: error)
                }
                let json = String(decoding: bytes, as: UTF8.self), hash = ArchiveHasher.sha256(.metadata, bytes)
                if metadataMemo.count >= 256 { metadataMemo.removeAll() }
                metadataMemo[m] = (json, hash)
                n.metadataJSON = json
                n.metadataHash = hash
            }
        }
        if let key = sample.semanticKey {
            do {
                n.semantic = .fingerprint(try Self.semanticFingerprint(type: typeIdentifier, key: key))
            } catch {
                throw ArchiveError(.invalidInput, "a \(typeIdentifier) sample has a semantic key that cannot be encoded", cause: error)
            }
        } else if let window = sample.semanticWindow {
            guard window.start.isFinite, window.end.isFinite else {
                throw ArchiveError(.invalidInput, "a \(typeIdentifier) sample has a non-finite semantic window")
            }
            n.semantic = .window(window)
        }
        do {
            n.payloadDigest = ArchiveHasher.sha256Digest(.payload, try SampleEncoding.payload(n))
            n.strictFingerprintDigest = try SampleEncoding.strictFingerprintDigest(n, occurrence: 0)
        } catch {
            throw ArchiveError(.invalidInput, "a \(typeIdentifier) sample cannot be hashed", cause: error)
        }
        return n
    }

    /// SHA-256 of `{"key":<key>,"type":<type>}`, written directly (the same bytes as
    /// encoding that object: "key" sorts before "type").
    static func semanticFingerprint(type: String, key: JSONValue) throws(HashingError) -> String {
        try semanticFingerprint(type: type) { (w: inout CanonicalJSONWriter) throws(HashingError) in try w.write(key) }
    }

    /// The fingerprint of `semanticFingerprint(type:key: window.key)`, written directly.
    static func semanticFingerprint(type: String, window: SemanticWindow) -> String {
        semanticFingerprint(type: type) { (w: inout CanonicalJSONWriter) in
            w.beginObject()
            w.key("end"); w.writeDate(window.end)
            w.key("start"); w.writeDate(window.start)
            w.endObject()
        }
    }

    /// SHA-256 of `{"key":<what writeKey writes>,"type":<type>}`.
    private static func semanticFingerprint<E: Error>(type: String, writeKey: (inout CanonicalJSONWriter) throws(E) -> Void) throws(E) -> String {
        var w = CanonicalJSONWriter(capacity: 160)
        w.beginObject()
        w.key("key")
        try writeKey(&w)
        w.field("type", type)
        w.endObject()
        return w.withBytes { ArchiveHasher.sha256(.semanticFingerprint, buffer: UnsafeRawBufferPointer($0)) }
    }

    private func normalizeSource(_ s: SourceDescriptor) -> (NormalizedSample.Source, NormalizedSample.Revision, String?)? {
        if let last = lastSource, last.0 == s { return last.1 }
        if let memo = sourceMemo[s] { lastSource = (s, memo); return memo }
        var result: (NormalizedSample.Source, NormalizedSample.Revision, String?)?
        let name = Self.clean(s.name)
        let bundle = Self.clean(s.bundleIdentifier)
        if name != nil || bundle != nil {
            result = (.init(nameHash: name.map { hasher.hmac(.sourceName, $0) }, bundleIdentifier: bundle),
                      .init(productType: Self.clean(s.productType), version: Self.clean(s.version),
                            operatingSystemVersion: Self.cleanOSVersion(s.operatingSystemVersion)),
                      bundle.map { ArchiveHasher.sha256(.sourceBundle, $0) })
        }
        if sourceMemo.count > 4096 { sourceMemo.removeAll() }
        sourceMemo[s] = result
        lastSource = (s, result)
        return result
    }

    func normalizeDevice(_ d: DeviceDescriptor) throws(ArchiveError) -> NormalizedSample.Device? {
        let fields: [String: String?] = [
            "name": Self.clean(d.name), "manufacturer": Self.clean(d.manufacturer), "model": Self.clean(d.model),
            "hardware_version": Self.clean(d.hardwareVersion), "firmware_version": Self.clean(d.firmwareVersion),
            "software_version": Self.cleanOSVersion(d.softwareVersion), "local_identifier": Self.clean(d.localIdentifier),
            "udi_device_identifier": Self.clean(d.udiDeviceIdentifier),
        ]
        if fields.values.allSatisfy({ $0 == nil }) { return nil }
        let json = JSONValue.object(fields.mapValues { JSONValue.optional($0) })
        let canonical: String
        do { canonical = try CanonicalJSON.string(json) } catch {
            throw ArchiveError(.invalidInput, "device fields cannot be encoded", cause: error)
        }
        return .init(deviceHash: hasher.hmac(.device, canonical),
                     manufacturerHash: Self.clean(d.manufacturer).map { hasher.hmac(.manufacturer, $0) },
                     model: Self.clean(d.model), hardwareVersion: Self.clean(d.hardwareVersion),
                     firmwareVersion: Self.clean(d.firmwareVersion), softwareVersion: Self.cleanOSVersion(d.softwareVersion),
                     localIdentifierHash: Self.clean(d.localIdentifier).map { hasher.hmac(.localIdentifier, $0) },
                     udiHash: Self.clean(d.udiDeviceIdentifier).map { hasher.hmac(.udi, $0) })
    }
}
