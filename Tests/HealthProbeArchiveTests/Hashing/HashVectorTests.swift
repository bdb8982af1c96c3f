import Foundation
import Testing
@testable import HealthProbeArchive
import HealthProbeTestSupport

struct HashVectors: Decodable {
    struct NumberCase: Decodable { var bits: String; var canonical: String }
    struct JSONCase: Decodable { var name: String; var input: String; var canonical: String }
    struct DateCase: Decodable { var unixSeconds: Double; var canonical: String }
    struct SHACase: Decodable { var domain: String; var input: String; var hex: String }
    struct HMACCase: Decodable { var keyHex: String; var domain: String; var input: String; var hex: String }
    struct SampleCase: Decodable {
        var name: String
        var secretHex: String
        var type: String
        var sample: [String: JSONValue]
        var expected: [String: JSONValue]
    }
    var numbers: [NumberCase]
    var canonicalJson: [JSONCase]
    var dates: [DateCase]
    var sha256: [SHACase]
    var hmac: [HMACCase]
    var samples: [SampleCase]

    static func load() throws -> HashVectors {
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        return try decoder.decode(HashVectors.self, from: Data(contentsOf: vectorURL("hashing.json")))
    }
}

extension JSONValue {
    var string: String? { if case .string(let s) = self { return s }; return nil }
    var number: Double? { if case .number(let d) = self { return d }; return nil }
    var object: [String: JSONValue]? { if case .object(let o) = self { return o }; return nil }
}

@Suite("Hash vectors (Protocol/vectors/hashing.json)")
struct HashVectorTests {
    let v: HashVectors
    init() throws { v = try HashVectors.load() }

    @Test("numbers print as ECMAScript prints them")
    func numbers() throws {
        #expect(v.numbers.count >= 24)
        for c in v.numbers {
            let d = Double(bitPattern: UInt64(c.bits, radix: 16)!)
            #expect(ECMAScriptNumber.format(d) == c.canonical, "bits \(c.bits)")
        }
        #expect(ECMAScriptNumber.format(.nan) == nil)
        #expect(ECMAScriptNumber.format(.infinity) == nil)
    }

    @Test("documents canonicalize per RFC 8785")
    func canonicalJSON() throws {
        for c in v.canonicalJson {
            let value = try JSONDecoder().decode(JSONValue.self, from: Data(c.input.utf8))
            #expect(try CanonicalJSON.string(value) == c.canonical, "case \(c.name)")
        }
    }

    @Test("dates print as ISO 8601 UTC with milliseconds and parse back")
    func dates() {
        for c in v.dates {
            #expect(CanonicalDate.string(c.unixSeconds) == c.canonical, "t=\(c.unixSeconds)")
            #expect(CanonicalDate.parse(c.canonical) == CanonicalDate.normalize(c.unixSeconds))
        }
        #expect(CanonicalDate.parse("2024-03-10 08:15:00 -0500") == CanonicalDate.parse("2024-03-10T13:15:00.000Z"))
        #expect(CanonicalDate.parse("2024-13-10T00:00:00Z") == nil)
        #expect(CanonicalDate.parse("not a date") == nil)
    }

    @Test("domain-prefixed SHA-256 and HMAC-SHA256")
    func hashes() throws {
        for c in v.sha256 {
            #expect(ArchiveHasher.sha256(HashDomain(rawValue: c.domain)!, c.input) == c.hex)
        }
        for c in v.hmac {
            let hasher = ArchiveHasher(secret: KeyStore.decodeHex(c.keyHex)!)
            #expect(hasher.hmac(HashDomain(rawValue: c.domain)!, c.input) == c.hex)
        }
    }

    @Test("every domain's table position is its position in allCases; every prefix is hp:v2:<domain>:, each its own")
    func domainOrdinals() {
        for (i, d) in HashDomain.allCases.enumerated() {
            #expect(d.ordinal == i, "\(d)")
            #expect(d.prefix == Array("hp:v2:\(d.rawValue):".utf8))
        }
        #expect(Set(HashDomain.allCases.map(\.prefix)).count == HashDomain.allCases.count)
        // Each domain hashes with its own prefix (the templates follow the ordinals).
        for d in HashDomain.allCases {
            var stream = SHA256Stream(domain: d)
            stream.update(Array("abc".utf8))
            #expect(ArchiveHasher.sha256(d, Array("abc".utf8)) == stream.finalize(), "\(d)")
        }
    }

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
            let hasher = ArchiveHasher(secret: KeyStore.decodeHex(c.secretHex)!)
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
    }

    @Test("strings written from UTF-8 bytes equal strings written from String, for every byte at every position")
    func bytesMatchStrings() {
        var rng = TestRandom(printingSeedFor: "bytesMatchStrings")
        var cases: [[UInt8]] = []
        for length in [0, 1, 7, 8, 9, 15, 16, 17, 64] {
            for position in 0..<max(length, 1) where length > 0 {
                for byte in UInt8.min...UInt8.max {
                    var text = (0..<length).map { _ in UInt8.random(in: 0x23...0x5B, using: &rng) }  // plain ASCII
                    text[position] = byte
                    cases.append(text)
                }
            }
            cases.append((0..<length).map { _ in UInt8(ascii: "a") })
        }
        cases.append(Array("caf\u{e9} \"quoted\" back\\slash\n".utf8))
        for text in cases {
            var a = CanonicalJSONWriter(), b = CanonicalJSONWriter()
            text.withUnsafeBufferPointer { a.writeString(utf8: $0) }
            b.writeString(String(decoding: text, as: UTF8.self))
            #expect(a.bytes == b.bytes, "\(text), seed \(rng.seed)")
            let naive = text.allSatisfy { $0 >= 0x20 && $0 != 0x22 && $0 != 0x5C && $0 < 0x80 }
            #expect(text.withUnsafeBufferPointer { CanonicalJSONWriter.isPlain($0) } == naive, "\(text), seed \(rng.seed)")
            if a.bytes != b.bytes { return }
        }
    }
}
