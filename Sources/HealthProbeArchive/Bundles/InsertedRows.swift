import Foundation
import HealthProbeCanonical

/// The samples and versions one bundle inserted, by the keys its later lines
/// name them with, so an event or range line finds its rows without a query.
/// Exact: the keys are the replica's unique keys (type and strict fingerprint;
/// sample and payload hash). Bounded: past `limit` entries nothing more is
/// remembered and lookups fall back to SQL.
struct InsertedRows {
    struct SampleKey: Hashable {
        let type: Int64
        let fingerprint: Digest32
    }

    let limit: Int
    private var samples: [SampleKey: Int64] = [:]
    /// The version a sample got in this bundle: (payload hash, version id).
    private var versions: [Int64: (hash: Digest32, id: Int64)] = [:]

    init(limit: Int = 100_000) { self.limit = limit }

    mutating func inserted(sample id: Int64, type: Int64, fingerprint: Digest32?) {
        guard let fingerprint, samples.count < limit else { return }
        samples[SampleKey(type: type, fingerprint: fingerprint)] = id
    }

    func sample(type: Int64, fingerprint: Digest32?) -> Int64? {
        guard let fingerprint, !samples.isEmpty else { return nil }
        return samples[SampleKey(type: type, fingerprint: fingerprint)]
    }

    mutating func inserted(version id: Int64, sample: Int64, payloadHash: Digest32?) {
        guard let payloadHash, versions.count < limit else { return }
        versions[sample] = (payloadHash, id)
    }

    func version(sample: Int64, payloadHash: Digest32?) -> Int64? {
        guard let payloadHash, let v = versions[sample], v.hash == payloadHash else { return nil }
        return v.id
    }
}
