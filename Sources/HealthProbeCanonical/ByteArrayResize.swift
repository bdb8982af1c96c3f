import Foundation

/// Zeros that `resize(to:)` copies from, a chunk at a time.
private let zeroChunk = [UInt8](repeating: 0, count: 1 << 16)

extension Array where Element == UInt8 {
    /// Makes the count exactly `n` (new bytes zero), keeping the capacity:
    /// no new allocation of this array when it is already large enough.
    /// Within the capacity, the zeros are copied from `zeroChunk` (no allocation):
    /// appending a `repeatElement` went byte by byte through generic code in debug builds,
    /// about 14 s for a full verification of two small chains' kept bundles. Past it, the
    /// array is made once at its new size (the old bytes copied, the rest zeroed), without
    /// a temporary array of zeros and a second copy.
    public mutating func resize(to n: Int) {
        if count > n { removeLast(count - n) }
        guard count < n else { return }
        if capacity >= n {
            while count < n { append(contentsOf: zeroChunk[0..<Swift.min(n - count, zeroChunk.count)]) }
            return
        }
        let old = count
        self = withUnsafeBufferPointer { source in
            [UInt8](unsafeUninitializedCapacity: n) { buffer, initialized in
                if old > 0 { memcpy(buffer.baseAddress!, source.baseAddress!, old) }
                memset(buffer.baseAddress! + old, 0, n - old)
                initialized = n
            }
        }
    }

    /// An array of `n` bytes whose contents `fill` writes (it must write every byte it
    /// reports, returned as its count, at most `n`): no zeros written first. What `fill`
    /// throws is rethrown, and the array then holds nothing.
    public static func filled(_ n: Int, _ fill: (UnsafeMutableRawBufferPointer) throws -> Int) rethrows -> [UInt8] {
        try [UInt8](unsafeUninitializedCapacity: n) { buffer, initialized in
            initialized = 0
            let written = try fill(UnsafeMutableRawBufferPointer(buffer))
            initialized = Swift.min(Swift.max(written, 0), n)
        }
    }
}
