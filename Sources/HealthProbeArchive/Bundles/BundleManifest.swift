import HealthProbeCanonical

/// The header and trailer of an observation bundle and its manifest hash
/// (Protocol/bundles.md).
///
/// `manifest_hash = SHA-256("hp:v2:manifest:" + canonical(header) + "\n"
///                  + item_hash_1 + "\n" + ... + item_hash_n + "\n" + canonical(trailer))`
public struct BundleHeader: Sendable, Equatable, Codable {
    public var bundleFormat = 1
    public var deviceChainHash: String
    /// 1-based position of the observation in its chain.
    public var sequence: Int
    /// The observation's id in the node's archive (informational).
    public var observationId: Int64
    /// The previous bundle's manifest hash in this chain; nil for sequence 1.
    public var previousManifestHash: String?

    /// The bundle formats this build reads and writes (Protocol/bundles.md): 2 adds `new_sample` items.
    public static let formats: ClosedRange<Int> = 1...2

    public init(deviceChainHash: String, sequence: Int, observationId: Int64, previousManifestHash: String?, format: Int = 1) {
        bundleFormat = format
        self.deviceChainHash = deviceChainHash
        self.sequence = sequence
        self.observationId = observationId
        self.previousManifestHash = previousManifestHash
    }

    public var json: JSONValue {
        .object(["bundle_format": .int(bundleFormat), "device_chain_hash": .string(deviceChainHash), "sequence": .int(sequence),
                 "observation_id": .number(Double(observationId)), "previous_manifest_hash": .optional(previousManifestHash)])
    }
}

/// Counts over the items, hashed after them.
public struct BundleTrailer: Sendable, Equatable, Codable {
    public var itemCount: Int
    public var counts: [String: Int]

    public var json: JSONValue {
        .object(["item_count": .int(itemCount), "counts": .object(counts.mapValues { .int($0) })])
    }
}

/// Computes a manifest hash incrementally while items stream.
public struct ManifestHasher {
    private var digest: SHA256Stream
    public private(set) var itemCount = 0
    /// Items per kind, by `BundleItemKind.order`.
    private var known = [Int](repeating: 0, count: BundleItemKind.allCases.count)
    /// Items of any other kind (only a damaged bundle's verification meets one).
    private var other: [String: Int] = [:]

    public init(header: BundleHeader) throws(HashingError) {
        digest = SHA256Stream(domain: .manifest)
        digest.update(try CanonicalJSON.encode(header.json))
        digest.update([0x0A])
    }

    /// Items per kind (kinds without items absent).
    public var counts: [String: Int] {
        var c = other
        for kind in BundleItemKind.allCases where known[kind.order] > 0 { c[kind.rawValue] = known[kind.order] }
        return c
    }

    /// Adds one item's hash (in bundle order).
    public mutating func add(itemHash: Digest32, kind: BundleItemKind) {
        hash(itemHash)
        known[kind.order] += 1
    }

    /// Adds one item's hash (in bundle order), of any kind.
    public mutating func add(itemHash: Digest32, kind: String) {
        if let k = BundleItemKind(rawValue: kind) { return add(itemHash: itemHash, kind: k) }
        hash(itemHash)
        other[kind, default: 0] += 1
    }

    /// The item hash's 64 hex digits and a newline, in one update.
    private mutating func hash(_ itemHash: Digest32) {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 65) { line in
            itemHash.writeHex(to: line.baseAddress!)
            line[64] = 0x0A
            digest.update(bufferPointer: UnsafeRawBufferPointer(line))
        }
        itemCount += 1
    }

    public var trailer: BundleTrailer { BundleTrailer(itemCount: itemCount, counts: counts) }

    /// The manifest hash (consumes the hasher).
    public consuming func finish() throws(HashingError) -> String {
        digest.update(try CanonicalJSON.encode(trailer.json))
        return digest.finalize()
    }
}
