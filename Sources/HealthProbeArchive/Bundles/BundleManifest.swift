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

    public init(deviceChainHash: String, sequence: Int, observationId: Int64, previousManifestHash: String?) {
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
    public private(set) var counts: [String: Int] = [:]

    public init(header: BundleHeader) throws(HashingError) {
        digest = SHA256Stream(domain: .manifest)
        digest.update(try CanonicalJSON.encode(header.json))
        digest.update([0x0A])
    }

    /// Adds one item's hash (in bundle order).
    public mutating func add(itemHash: String, kind: String) {
        digest.update(Array(itemHash.utf8))
        digest.update([0x0A])
        itemCount += 1
        counts[kind, default: 0] += 1
    }

    public var trailer: BundleTrailer { BundleTrailer(itemCount: itemCount, counts: counts) }

    /// The manifest hash (consumes the hasher).
    public consuming func finish() throws(HashingError) -> String {
        digest.update(try CanonicalJSON.encode(trailer.json))
        return digest.finalize()
    }
}
