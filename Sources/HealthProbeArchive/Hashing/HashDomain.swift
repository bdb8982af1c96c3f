/// Every hashed input starts with `hp:v2:<domain>:`. One case per domain.
public enum HashDomain: String, Sendable, CaseIterable {
    // Content hashes (SHA-256).
    case payload
    case strictFingerprint = "strict_fingerprint"
    case semanticFingerprint = "semantic_fingerprint"
    case sourceBundle = "source_bundle"
    case metadata
    case typeSet = "type_set"
    case aggregate
    case item
    case manifest
    case page
    case chainState = "chain_state"
    case exportItem = "export_item"
    case exportManifest = "export_manifest"
    case source
    case credential
    case enrollmentSecret = "enrollment_secret"
    // Privacy hashes (HMAC-SHA256 with the archive secret).
    case sampleUUID = "sample_uuid"
    case deviceChain = "device_chain"
    case sourceName = "source_name"
    case device
    case manufacturer
    case localIdentifier = "local_identifier"
    case udi
    case errorMessage = "error_message"
    case personal

    /// `hp:v2:<domain>:` as bytes.
    public var prefix: [UInt8] { Self.prefixes[self]! }

    private static let prefixes: [HashDomain: [UInt8]] = Dictionary(
        uniqueKeysWithValues: allCases.map { ($0, Array("hp:v2:\($0.rawValue):".utf8)) })
}
