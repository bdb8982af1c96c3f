import Foundation

/// The samples and versions one bundle inserted, by the keys its later lines
/// name them with, so an event or range line finds its rows without a query.
/// Exact: the keys are the replica's unique keys (type and strict fingerprint;
/// sample and payload hash). Bounded: past `limit` entries nothing more is
/// remembered and lookups fall back to SQL.
struct InsertedRows {
    /// A 64-character lower-case hex hash as 32 bytes.
    struct Hash32: Hashable {
        let a, b, c, d: UInt64

        /// Nil unless `range` of `bytes` is exactly 64 lower-case hex digits (decoded
        /// by `StoredHash.decode`, branch-free, as the archive stores hashes).
        init?(_ bytes: [UInt8], _ range: Range<Int>) {
            let words: (UInt64, UInt64, UInt64, UInt64)? = bytes.withUnsafeBufferPointer { buf in
                withUnsafeTemporaryAllocation(of: UInt64.self, capacity: 4) { w in
                    let raw = UnsafeMutableRawPointer(w.baseAddress!).assumingMemoryBound(to: UInt8.self)
                    guard StoredHash.decode(UnsafeBufferPointer(rebasing: buf[range]), into: raw) else { return nil }
                    return (UInt64(bigEndian: w[0]), UInt64(bigEndian: w[1]), UInt64(bigEndian: w[2]), UInt64(bigEndian: w[3]))
                }
            }
            guard let words else { return nil }
            (a, b, c, d) = words
        }
    }

    struct SampleKey: Hashable {
        let type: Int64
        let fingerprint: Hash32
    }

    let limit: Int
    private var samples: [SampleKey: Int64] = [:]
    /// The version a sample got in this bundle: (payload hash, version id).
    private var versions: [Int64: (hash: Hash32, id: Int64)] = [:]

    init(limit: Int = 100_000) { self.limit = limit }

    mutating func inserted(sample id: Int64, type: Int64, fingerprint: Hash32?) {
        guard let fingerprint, samples.count < limit else { return }
        samples[SampleKey(type: type, fingerprint: fingerprint)] = id
    }

    func sample(type: Int64, fingerprint: Hash32?) -> Int64? {
        guard let fingerprint, !samples.isEmpty else { return nil }
        return samples[SampleKey(type: type, fingerprint: fingerprint)]
    }

    mutating func inserted(version id: Int64, sample: Int64, payloadHash: Hash32?) {
        guard let payloadHash, versions.count < limit else { return }
        versions[sample] = (payloadHash, id)
    }

    func version(sample: Int64, payloadHash: Hash32?) -> Int64? {
        guard let payloadHash, let v = versions[sample], v.hash == payloadHash else { return nil }
        return v.id
    }
}
