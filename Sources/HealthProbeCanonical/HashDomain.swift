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
    case ingestKey = "ingest_key"
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
    case webSession = "web_session"

    /// `hp:v2:<domain>:` as bytes.
    public var prefix: [UInt8] { Self.prefixes[ordinal] }

    /// The case's position in `allCases`. A switch: per-domain tables are indexed by
    /// it, where a dictionary keyed by the case hashed its raw string on every hash.
    var ordinal: Int {
        switch self {
        case .payload: 0
        case .strictFingerprint: 1
        case .semanticFingerprint: 2
        case .sourceBundle: 3
        case .metadata: 4
        case .typeSet: 5
        case .aggregate: 6
        case .item: 7
        case .manifest: 8
        case .page: 9
        case .chainState: 10
        case .exportItem: 11
        case .exportManifest: 12
        case .source: 13
        case .credential: 14
        case .enrollmentSecret: 15
        case .ingestKey: 16
        case .sampleUUID: 17
        case .deviceChain: 18
        case .sourceName: 19
        case .device: 20
        case .manufacturer: 21
        case .localIdentifier: 22
        case .udi: 23
        case .errorMessage: 24
        case .personal: 25
        case .webSession: 26
        }
    }

    private static let prefixes: [[UInt8]] = allCases.map { Array("hp:v2:\($0.rawValue):".utf8) }
}
