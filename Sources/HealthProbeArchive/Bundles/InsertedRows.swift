import Foundation
import HealthProbeCanonical

/// The samples and versions one bundle inserted, by the keys its later lines
/// name them with, so an event or range line finds its rows without a query.
/// Exact: the keys are the replica's unique keys (type and strict fingerprint;
/// sample and payload hash). Bounded: past `limit` samples nothing more is remembered
/// (the run's versions are kept in its slots, other versions up to `limit` more) and
/// lookups fall back to SQL.
///
/// Two ways in. The samples a bundle inserts get consecutive rowids, and its version,
/// event and range lines name them in that order: while they do, the run of samples
/// kept by rowid answers a guessed rowid by comparing its key in place (`sample(at:)`,
/// `version(sample:)` by the same slot), with no hashing and memory read in order; at
/// 300,000 samples the hash tables' lookups had taken a fifth of the applying
/// thread. The hash tables answer whatever else a bundle names, in any order.
public struct InsertedRows {
    /// Samples remembered by default (each run slot 80 bytes, besides the hash tables).
    public static let defaultLimit = 100_000

    struct SampleKey: Hashable {
        let type: Int64
        let fingerprint: Digest32
    }

    let limit: Int
    private var samples: [SampleKey: Int64] = [:]
    /// The version a sample got in this bundle: (payload hash, version id).
    private var versions: [Int64: (hash: Digest32, id: Int64)] = [:]
    /// Samples inserted with consecutive rowids from `firstInRun`: slot `i` is rowid
    /// `firstInRun + i`, with the version it got in this bundle (`versionID` 0: none yet).
    private var run: [(key: SampleKey, versionHash: Digest32, versionID: Int64)] = []
    private var firstInRun: Int64 = 0

    init(limit: Int = defaultLimit) { self.limit = max(limit, 0) }

    mutating func inserted(sample id: Int64, type: Int64, fingerprint: Digest32?) {
        guard let fingerprint, samples.count < limit else { return }
        let key = SampleKey(type: type, fingerprint: fingerprint)
        samples[key] = id
        if run.isEmpty { firstInRun = id }
        // A gap ends the run; what follows is found through the hash table alone.
        if id == firstInRun + Int64(run.count), samples.count == run.count + 1 {
            run.append((key, .zero, 0))
        }
    }

    /// The slot of rowid `id` in the run, if it is there.
    private func slot(_ id: Int64) -> Int? {
        let i = id &- firstInRun
        return i >= 0 && i < Int64(run.count) ? Int(i) : nil
    }

    /// `id` when it is the sample of this type and strict fingerprint that the run holds
    /// at that rowid; nil when it is not, or not in the run (then ask `sample(type:fingerprint:)`).
    func sample(at id: Int64, type: Int64, fingerprint: Digest32?) -> Int64? {
        guard let fingerprint, let i = slot(id), run[i].key.type == type, run[i].key.fingerprint == fingerprint else { return nil }
        return id
    }

    /// Whether rowid `id` is in the run: `sample(at:)` then answers for it exactly.
    func inRun(_ id: Int64) -> Bool { slot(id) != nil }

    func sample(type: Int64, fingerprint: Digest32?) -> Int64? {
        guard let fingerprint, !samples.isEmpty else { return nil }
        return samples[SampleKey(type: type, fingerprint: fingerprint)]
    }

    mutating func inserted(version id: Int64, sample: Int64, payloadHash: Digest32?) {
        guard let payloadHash else { return }
        if let i = slot(sample) {
            run[i].versionHash = payloadHash
            run[i].versionID = id
            return
        }
        guard versions.count < limit else { return }
        versions[sample] = (payloadHash, id)
    }

    func version(sample: Int64, payloadHash: Digest32?) -> Int64? {
        guard let payloadHash else { return nil }
        if let i = slot(sample) {
            return run[i].versionID != 0 && run[i].versionHash == payloadHash ? run[i].versionID : nil
        }
        guard let v = versions[sample], v.hash == payloadHash else { return nil }
        return v.id
    }
}
