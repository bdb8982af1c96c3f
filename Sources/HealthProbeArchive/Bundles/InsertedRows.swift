import Foundation
import HealthProbeCanonical

/// The samples and versions one bundle inserted, by the keys its later lines
/// name them with, so an event or range line finds its rows without a query.
/// Bounded: past `limit` samples outside the run nothing more is kept by key, past
/// `runLimit` the run ends, and lookups fall back to SQL.
///
/// Two ways in. The samples a bundle inserts get consecutive rowids, and its version,
/// event and range lines name them in that order: while they do, the run of samples
/// kept by rowid answers a guessed rowid by comparing a tag of its key in place
/// (`sample(at:)`, `version(sample:)` by the same slot), with no hashing of tables and
/// memory read in order. A hash table, exact on the whole key, answers whatever else a
/// bundle names, in any order, for samples outside the run.
///
/// The run keeps 64-bit tags, not keys: 24 bytes a sample where the keys took 80, so a
/// million samples fit where a hundred thousand did, and each rowid lookup the run saves
/// is one SQL statement less (at a million samples, 4.3 million statements of the
/// applying thread; docs/decisions/2026-12-02-run-tags.md). A tag is
/// SipHash of the key under a key drawn at random for each bundle, which the bundle
/// never sees: two different keys share a tag with probability 2^-64 per comparison,
/// whatever the bundle holds.
public struct InsertedRows {
    /// Samples and versions outside the run kept by key by default.
    public static let defaultLimit = 100_000
    /// Samples the run holds by default: 24 bytes each, 24 MiB at most.
    public static let defaultRunLimit = 1 << 20

    struct SampleKey: Hashable {
        let type: Int64
        let fingerprint: Digest32
    }

    let limit: Int
    let runLimit: Int
    /// Samples outside the run, by their whole key.
    private var samples: [SampleKey: Int64] = [:]
    /// The version a sample outside the run got in this bundle: (payload hash, version id).
    private var versions: [Int64: (hash: Digest32, id: Int64)] = [:]
    /// A sample of the run: its key's tag, the version it got in this bundle (`versionID` 0:
    /// none yet) and that version's payload hash's tag.
    private struct Slot {
        var sampleTag: UInt64
        var versionTag: UInt64 = 0
        var versionID: Int64 = 0
    }
    /// Samples inserted with consecutive rowids from `firstInRun`: slot `i` is rowid `firstInRun + i`.
    private var run: [Slot] = []
    private var firstInRun: Int64 = 0
    /// The run ended (a gap, a sample without a fingerprint, or `runLimit`): nothing joins it again.
    private var runEnded = false
    private let tagKey: (UInt64, UInt64)

    /// `limit` 0 keeps nothing, run included (every lookup through SQL).
    init(limit: Int = defaultLimit, runLimit: Int = defaultRunLimit) {
        self.limit = max(limit, 0)
        self.runLimit = limit > 0 ? max(runLimit, 0) : 0
        var random = SystemRandomNumberGenerator()
        tagKey = (random.next(), random.next())
    }

    /// The tag of a sample key or (with `type` -1) of a payload hash.
    @inline(__always)
    private func tag(_ type: Int64, _ d: Digest32) -> UInt64 {
        var h = Hasher()
        h.combine(tagKey.0)
        h.combine(tagKey.1)
        h.combine(type)
        h.combine(d.w0)
        h.combine(d.w1)
        h.combine(d.w2)
        h.combine(d.w3)
        return UInt64(truncatingIfNeeded: h.finalize())
    }

    mutating func inserted(sample id: Int64, type: Int64, fingerprint: Digest32?) {
        // A sample without a fingerprint is not kept; its rowid is a gap that ends the run.
        guard let fingerprint else { return }
        if !runEnded, run.count < runLimit {
            if run.isEmpty { firstInRun = id }
            if id == firstInRun + Int64(run.count) {
                run.append(Slot(sampleTag: tag(type, fingerprint)))
                return
            }
        }
        // A gap (or the run's limit) ends the run; what follows is found by its key alone.
        runEnded = runEnded || !run.isEmpty
        guard samples.count < limit else { return }
        samples[SampleKey(type: type, fingerprint: fingerprint)] = id
    }

    /// The slot of rowid `id` in the run, if it is there.
    private func slot(_ id: Int64) -> Int? {
        let i = id &- firstInRun
        return i >= 0 && i < Int64(run.count) ? Int(i) : nil
    }

    /// `id` when the run holds a sample of this type and strict fingerprint at that rowid
    /// (by its tag); nil when it does not, or `id` is not in the run (then ask
    /// `sample(type:fingerprint:)`, and SQL).
    func sample(at id: Int64, type: Int64, fingerprint: Digest32?) -> Int64? {
        guard let fingerprint, let i = slot(id), run[i].sampleTag == tag(type, fingerprint) else { return nil }
        return id
    }

    /// Whether rowid `id` is in the run: `sample(at:)` then answers for it.
    func inRun(_ id: Int64) -> Bool { slot(id) != nil }

    /// A sample outside the run by its whole key.
    func sample(type: Int64, fingerprint: Digest32?) -> Int64? {
        guard let fingerprint, !samples.isEmpty else { return nil }
        return samples[SampleKey(type: type, fingerprint: fingerprint)]
    }

    mutating func inserted(version id: Int64, sample: Int64, payloadHash: Digest32?) {
        guard let payloadHash else { return }
        if let i = slot(sample) {
            run[i].versionTag = tag(-1, payloadHash)
            run[i].versionID = id
            return
        }
        guard versions.count < limit else { return }
        versions[sample] = (payloadHash, id)
    }

    func version(sample: Int64, payloadHash: Digest32?) -> Int64? {
        guard let payloadHash else { return nil }
        if let i = slot(sample) {
            return run[i].versionID != 0 && run[i].versionTag == tag(-1, payloadHash) ? run[i].versionID : nil
        }
        guard let v = versions[sample], v.hash == payloadHash else { return nil }
        return v.id
    }
}
