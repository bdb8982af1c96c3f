/// Formats a `Double` exactly as ECMAScript `Number.prototype.toString` does,
/// which is what RFC 8785 (JSON Canonicalization Scheme) requires for numbers.
public enum ECMAScriptNumber {
    /// Returns the canonical text, or `nil` for NaN and infinities (not valid JSON).
    public static func format(_ value: Double) -> String? {
        withFormatted(value) { String(decoding: $0, as: UTF8.self) }
    }

    /// The longest text `withFormatted` writes ("-0." + 5 zeros + 17 digits, or 21 digits,
    /// or d.ddddddddddddddde-324 with its sign), rounded up.
    static let maxLength = 32

    /// Calls `body` with the canonical text of `value` (valid only during the call), or
    /// returns nil for NaN and infinities. Writes into a stack buffer: no allocation
    /// beyond Swift's shortest round-trip description, which fits a small string.
    public static func withFormatted<R>(_ value: Double, _ body: (UnsafeBufferPointer<UInt8>) -> R) -> R? {
        guard value.isFinite else { return nil }
        if value == 0 { return withUnsafeBytes(of: UInt8(ascii: "0")) { body($0.assumingMemoryBound(to: UInt8.self)) } }  // also -0
        // Swift's description is the shortest round-trip representation: digits, an
        // optional point, an optional exponent ("1.5e-07", "123.25", "1e+22").
        let text = value.magnitude.description
        return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 2 * maxLength) { buffer -> R in
            let digits = buffer.baseAddress!, out = digits + maxLength
            var count = 0, integerDigits = 0, exponent = 0
            var seenPoint = false, inExponent = false, exponentNegative = false
            for byte in text.utf8 {
                if inExponent {
                    if byte == UInt8(ascii: "-") { exponentNegative = true } else if byte != UInt8(ascii: "+") {
                        exponent = exponent * 10 + Int(byte &- 0x30)
                    }
                } else if byte == UInt8(ascii: "e") || byte == UInt8(ascii: "E") {
                    inExponent = true
                } else if byte == UInt8(ascii: ".") {
                    seenPoint = true
                } else if count < maxLength {
                    digits[count] = byte
                    count += 1
                    if !seenPoint { integerDigits += 1 }
                }
            }
            if exponentNegative { exponent = -exponent }
            // value = 0.d1d2d3... * 10^n
            var n = integerDigits + exponent
            var start = 0
            while start < count - 1 && digits[start] == UInt8(ascii: "0") {
                start += 1
                n -= 1
            }
            var end = count
            while end > start + 1 && digits[end - 1] == UInt8(ascii: "0") { end -= 1 }
            let s = digits + start, k = end - start
            var o = 0
            func put(_ b: UInt8) { out[o] = b; o += 1 }
            func put(_ p: UnsafeMutablePointer<UInt8>, _ c: Int) { for i in 0..<c { out[o + i] = p[i] }; o += c }
            if value < 0 { put(UInt8(ascii: "-")) }
            if k <= n && n <= 21 {
                put(s, k)
                for _ in 0..<(n - k) { put(UInt8(ascii: "0")) }
            } else if 0 < n && n <= 21 {
                put(s, n)
                put(UInt8(ascii: "."))
                put(s + n, k - n)
            } else if -6 < n && n <= 0 {
                put(UInt8(ascii: "0")); put(UInt8(ascii: "."))
                for _ in 0..<(-n) { put(UInt8(ascii: "0")) }
                put(s, k)
            } else {
                put(s[0])
                if k > 1 {
                    put(UInt8(ascii: "."))
                    put(s + 1, k - 1)
                }
                put(UInt8(ascii: "e"))
                let e = n - 1
                put(e < 0 ? UInt8(ascii: "-") : UInt8(ascii: "+"))
                var m = e.magnitude, width = 1
                while m >= 10 { m /= 10; width *= 10 }
                m = e.magnitude
                while width > 0 { put(UInt8(ascii: "0") + UInt8(m / UInt(width))); m %= UInt(width); width /= 10 }
            }
            return body(UnsafeBufferPointer(start: out, count: o))
        }
    }
}
