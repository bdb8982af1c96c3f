import Foundation
import HealthProbeCanonical

/// Protocol/vectors/hashing.json.
public struct HashVectors: Decodable, Sendable {
    public struct NumberCase: Decodable, Sendable { public var bits: String; public var canonical: String }
    public struct JSONCase: Decodable, Sendable { public var name: String; public var input: String; public var canonical: String }
    public struct DateCase: Decodable, Sendable { public var unixSeconds: Double; public var canonical: String }
    public struct SHACase: Decodable, Sendable { public var domain: String; public var input: String; public var hex: String }
    public struct HMACCase: Decodable, Sendable { public var keyHex: String; public var domain: String; public var input: String; public var hex: String }
    public struct SampleCase: Decodable, Sendable {
        public var name: String
        public var secretHex: String
        public var type: String
        public var sample: [String: JSONValue]
        public var expected: [String: JSONValue]
    }
    public var numbers: [NumberCase]
    public var canonicalJson: [JSONCase]
    public var dates: [DateCase]
    public var sha256: [SHACase]
    public var hmac: [HMACCase]
    public var samples: [SampleCase]

    public static func load() throws -> HashVectors {
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        return try decoder.decode(HashVectors.self, from: Data(contentsOf: vectorURL("hashing.json")))
    }
}

extension JSONValue {
    public var string: String? { if case .string(let s) = self { return s }; return nil }
    public var number: Double? { if case .number(let d) = self { return d }; return nil }
    public var object: [String: JSONValue]? { if case .object(let o) = self { return o }; return nil }
}
