extension Array where Element == UInt8 {
    /// Makes the count exactly `n` (new bytes zero), keeping the capacity:
    /// no new allocation of this array when it is already large enough.
    /// The zeros are appended from an array (a memset and a memcpy): appending a
    /// `repeatElement` went byte by byte through generic code in debug builds, about
    /// 14 s for a full verification of two small chains' kept bundles.
    public mutating func resize(to n: Int) {
        if count > n { removeLast(count - n) }
        if count < n { append(contentsOf: [UInt8](repeating: 0, count: n - count)) }
    }
}
