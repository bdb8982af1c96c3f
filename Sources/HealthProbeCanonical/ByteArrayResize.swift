extension Array where Element == UInt8 {
    /// Makes the count exactly `n` (new bytes zero), keeping the capacity:
    /// no new allocation when a reused buffer is already large enough.
    public mutating func resize(to n: Int) {
        if count > n { removeLast(count - n) }
        if count < n { append(contentsOf: repeatElement(0, count: n - count)) }
    }
}
