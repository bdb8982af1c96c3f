import Foundation
import HealthProbeArchive

public typealias HealthProbeArchiveJSON = JSONValue

/// Canonical JSON for frame payloads.
enum CanonicalJSONBridge {
    static func encode(_ v: JSONValue) throws -> [UInt8] { try CanonicalJSON.encode(v) }

    static func decodeObject(_ bytes: [UInt8]) throws -> [String: JSONValue]? {
        guard let v = try? JSONDecoder().decode(JSONValue.self, from: Data(bytes)), case .object(let o) = v else { return nil }
        return o
    }
}
