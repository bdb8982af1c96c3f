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

        /// Nil unless `range` of `bytes` is exactly 64 lower-case hex digits.
        init?(_ bytes: [UInt8], _ range: Range<Int>) {
            guard range.count == 64 else { return nil }
            // Branch-free: which of digit or letter a character is cannot be predicted
            // (branching on it cost 2.6x as much, about 1 ms per 1,000-sample bundle).
            var bad: UInt8 = 0
            let words: (UInt64, UInt64, UInt64, UInt64) = bytes.withUnsafeBufferPointer { buf in
                func word(_ p: Int) -> UInt64 {
                    var w: UInt64 = 0
                    for k in 0..<16 {
                        let c = buf[p &+ k]
                        let digit: UInt8 = c &- 0x30 < 10 ? 1 : 0, letter: UInt8 = c &- 0x61 < 6 ? 1 : 0
                        bad |= (digit | letter) ^ 1
                        // '0'...'9' are 0x30...0x39, 'a'...'f' are 0x61...0x66.
                        w = w &<< 4 | UInt64((c & 0x0F) &+ 9 &* (c &>> 6))
                    }
                    return w
                }
                let p = range.lowerBound
                return (word(p), word(p &+ 16), word(p &+ 32), word(p &+ 48))
            }
            guard bad == 0 else { return nil }
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
