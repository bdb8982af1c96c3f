/// Formats a `Double` exactly as ECMAScript `Number.prototype.toString` does,
/// which is what RFC 8785 (JSON Canonicalization Scheme) requires for numbers.
public enum ECMAScriptNumber {
    /// Returns the canonical text, or `nil` for NaN and infinities (not valid JSON).
    public static func format(_ value: Double) -> String? {
        guard value.isFinite else { return nil }
        if value == 0 { return "0" }  // also -0
        // Swift's description is the shortest round-trip representation.
        var text = value.magnitude.description
        var exponent = 0
        if let e = text.firstIndex(where: { $0 == "e" || $0 == "E" }) {
            exponent = Int(text[text.index(after: e)...])!
            text = String(text[..<e])
        }
        var digits: [UInt8] = []
        digits.reserveCapacity(20)
        var integerDigits = 0
        var seenPoint = false
        for byte in text.utf8 {
            if byte == UInt8(ascii: ".") { seenPoint = true; continue }
            digits.append(byte)
            if !seenPoint { integerDigits += 1 }
        }
        // value = 0.d1d2d3... * 10^n
        var n = integerDigits + exponent
        var start = 0
        while start < digits.count - 1 && digits[start] == UInt8(ascii: "0") {
            start += 1
            n -= 1
        }
        var end = digits.count
        while end > start + 1 && digits[end - 1] == UInt8(ascii: "0") { end -= 1 }
        let s = Array(digits[start..<end])
        let k = s.count
        var out: [UInt8] = []
        out.reserveCapacity(k + 8)
        if value < 0 { out.append(UInt8(ascii: "-")) }
        if k <= n && n <= 21 {
            out.append(contentsOf: s)
            out.append(contentsOf: repeatElement(UInt8(ascii: "0"), count: n - k))
        } else if 0 < n && n <= 21 {
            out.append(contentsOf: s[0..<n])
            out.append(UInt8(ascii: "."))
            out.append(contentsOf: s[n...])
        } else if -6 < n && n <= 0 {
            out.append(contentsOf: Array("0.".utf8))
            out.append(contentsOf: repeatElement(UInt8(ascii: "0"), count: -n))
            out.append(contentsOf: s)
        } else {
            out.append(s[0])
            if k > 1 {
                out.append(UInt8(ascii: "."))
                out.append(contentsOf: s[1...])
            }
            out.append(UInt8(ascii: "e"))
            let e = n - 1
            out.append(e < 0 ? UInt8(ascii: "-") : UInt8(ascii: "+"))
            out.append(contentsOf: Array(String(e.magnitude).utf8))
        }
        return String(decoding: out, as: UTF8.self)
    }
}
