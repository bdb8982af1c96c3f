import Foundation
import Testing
@testable import HealthProbeArchive
import HealthProbeCanonical
import HealthProbeTestSupport

/// The sample hashes of Protocol/vectors/hashing.json (the canonical layer's own
/// vectors are checked in HealthProbeCanonicalTests).
@Suite("Sample hash vectors (Protocol/vectors/hashing.json)")
struct SampleHashVectorTests {
    let v: HashVectors

    init() throws { v = try HashVectors.load() }

    @Test("sample payload, fingerprint and provenance hashes")
    func samples() throws {
        #expect(v.samples.count >= 4)
        for c in v.samples {
            let s = c.sample
            func str(_ o: [String: JSONValue]?, _ k: String) -> String? { o?[k]?.string }
            var sample = CapturedSample(uuid: str(s, "uuid"), startDate: s["start"]!.number!, endDate: s["end"]!.number!,
                                        valueKind: ValueKind(rawValue: s["value_kind"]!.string!)!,
                                        numericValue: s["numeric_value"]?.number, unit: str(s, "unit"),
                                        categoryValue: s["category_value"]?.number.map { Int($0) },
                                        workoutActivityType: s["workout_activity_type"]?.number.map { Int($0) },
                                        durationSeconds: s["duration_seconds"]?.number, metadata: s["metadata"]?.object)
            sample.creationDate = s["creation"]?.number
            if let src = s["source"]?.object {
                sample.source = SourceDescriptor(name: str(src, "name"), bundleIdentifier: str(src, "bundle_identifier"),
                                                 productType: str(src, "product_type"), version: str(src, "version"),
                                                 operatingSystemVersion: str(src, "operating_system_version"))
            }
            if let d = s["device"]?.object {
                sample.device = DeviceDescriptor(name: str(d, "name"), manufacturer: str(d, "manufacturer"), model: str(d, "model"),
                                                 hardwareVersion: str(d, "hardware_version"), softwareVersion: str(d, "software_version"))
            }
            let hasher = ArchiveHasher(secret: ArchiveHasher.bytes(lowerHex: c.secretHex)!)
            let n = try SampleNormalizer(hasher: hasher).normalize(sample, typeIdentifier: c.type)
            let e = c.expected
            #expect(String(decoding: try SampleEncoding.payload(n), as: UTF8.self) == e["payload_json"]?.string, "\(c.name) payload json")
            #expect(n.payloadHash == e["payload_hash"]?.string, "\(c.name) payload hash")
            #expect(String(decoding: try SampleEncoding.strictFingerprint(n, occurrence: 0), as: UTF8.self) == e["strict_fingerprint_json"]?.string, "\(c.name)")
            #expect(try SampleEncoding.strictFingerprintHash(n, occurrence: 0) == e["strict_fingerprint"]?.string, "\(c.name)")
            #expect(try SampleEncoding.strictFingerprintHash(n, occurrence: 1) == e["strict_fingerprint_occurrence_1"]?.string, "\(c.name)")
            #expect(n.uuidHash == e["uuid_hash"]?.string, "\(c.name) uuid hash")
            #expect(n.device?.deviceHash == e["device_hash"]?.string, "\(c.name) device hash")
            #expect(n.metadataHash == e["metadata_hash"]?.string, "\(c.name) metadata hash")
            #expect(n.metadataJSON == e["metadata_json"]?.string, "\(c.name) metadata json")
        }
    }

    @Test("hand-built payload JSON equals the generic canonical encoder's output")
    func handBuiltMatchesGeneric() throws {
        let hasher = ArchiveHasher(secret: [UInt8](repeating: 7, count: 32))
        let n = try SampleNormalizer(hasher: hasher).normalize(hr(3), typeIdentifier: heartRate.identifier)
        let bytes = try SampleEncoding.payload(n)
        let reparsed = try JSONDecoder().decode(JSONValue.self, from: Data(bytes))
        #expect(try CanonicalJSON.encode(reparsed) == bytes)
    }

    @Test("semantic fingerprints written directly (from a key or a time window), and metadata from the memo, equal the generic encoding")
    func directSemanticAndMemoizedMetadata() throws {
        let keys: [JSONValue] = [
            .object(["start": .string("2024-06-01T00:00:00.000Z"), "end": .string("2024-06-01T00:01:00.000Z")]),
            .object(["é\u{1F600}": .array([.number(1.5), .null, .bool(true)]), "a": .object(["z": .string("\"\n")])]),
            .string("plain"), .number(-0.1), .array([]),
        ]
        for key in keys {
            let generic = try ArchiveHasher.sha256(.semanticFingerprint, json: .object(["type": .string("HKQuantityTypeIdentifierHeartRate"), "key": key]))
            #expect(try SampleNormalizer.semanticFingerprint(type: "HKQuantityTypeIdentifierHeartRate", key: key) == generic)
        }
        for (start, end) in [(1_717_200_000.0, 1_717_200_060.0), (0.0, 0.001), (1_717_200_000.123, 1_717_286_399.999), (-86_400.5, 4_102_444_800.0)] {
            let window = SemanticWindow(start: start, end: end)
            #expect(SampleNormalizer.semanticFingerprint(type: "HKQuantityTypeIdentifierStepCount", window: window)
                    == (try SampleNormalizer.semanticFingerprint(type: "HKQuantityTypeIdentifierStepCount", key: window.key)), "\(start) \(end)")
            var a = hr(2), b = hr(2)
            a.semanticWindow = window
            b.semanticKey = window.key
            let na = try SampleNormalizer(hasher: ArchiveHasher(secret: [UInt8](repeating: 7, count: 32))).normalize(a, typeIdentifier: heartRate.identifier)
            let nb = try SampleNormalizer(hasher: ArchiveHasher(secret: [UInt8](repeating: 7, count: 32))).normalize(b, typeIdentifier: heartRate.identifier)
            #expect(na.semanticFingerprint != nil && na.semanticFingerprint == nb.semanticFingerprint)
        }
        let hasher = ArchiveHasher(secret: [UInt8](repeating: 7, count: 32))
        let shared = SampleNormalizer(hasher: hasher)
        for value in ["0", "1", "0", "2", "1"] {
            var sample = hr(1)
            sample.metadata = ["HKMetadataKeyHeartRateMotionContext": .string(value), "HKTimeZone": .string("Europe/Berlin")]
            let memoized = try shared.normalize(sample, typeIdentifier: heartRate.identifier)
            let fresh = try SampleNormalizer(hasher: hasher).normalize(sample, typeIdentifier: heartRate.identifier)
            #expect(memoized.metadataJSON == fresh.metadataJSON && memoized.metadataHash == fresh.metadataHash)
            #expect(memoized.payloadHash == fresh.payloadHash)
            #expect(memoized.metadataJSON?.contains("\"HKMetadataKeyHeartRateMotionContext\":\"\(value)\"") == true)
            #expect(memoized.strictFingerprint == (try SampleEncoding.strictFingerprintHash(memoized, occurrence: 0)))
        }
        // Sources and devices alternating, repeating and differing in one field: the shared
        // normalizer (its last-value and dictionary memos) gives what a fresh one gives.
        let watch = SourceDescriptor(name: "Watch", bundleIdentifier: "com.example.watch", productType: "Watch6,1", version: "10.1", operatingSystemVersion: "10.1")
        var newer = watch
        newer.operatingSystemVersion = "10.2"
        let phone = SourceDescriptor(name: "Phone", bundleIdentifier: "com.example.phone")
        let sensor = DeviceDescriptor(name: "Sensor", manufacturer: "Example", model: "S1", hardwareVersion: "1")
        var otherSensor = sensor
        otherSensor.hardwareVersion = "2"
        for (source, device) in [(watch, sensor), (watch, sensor), (newer, sensor), (watch, otherSensor), (phone, nil), (watch, sensor), (newer, otherSensor)] {
            var sample = hr(3)
            sample.source = source
            sample.device = device
            let memoized = try shared.normalize(sample, typeIdentifier: heartRate.identifier)
            let fresh = try SampleNormalizer(hasher: hasher).normalize(sample, typeIdentifier: heartRate.identifier)
            #expect(memoized.source == fresh.source && memoized.revision == fresh.revision && memoized.device == fresh.device)
            #expect(memoized.sourceBundleHash == fresh.sourceBundleHash && memoized.payloadHash == fresh.payloadHash)
            #expect(memoized.revision?.operatingSystemVersion == source.operatingSystemVersion && memoized.device?.hardwareVersion == device?.hardwareVersion)
        }
    }
}
