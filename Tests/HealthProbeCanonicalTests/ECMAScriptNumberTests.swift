import Foundation
import Testing
@testable import HealthProbeCanonical

/// The stack-buffer formatter against the array-based formatter it replaced (which the
/// number vectors verified): the same text for every value tried.
@Suite("ECMAScript numbers")
struct ECMAScriptNumberTests {
    /// The earlier implementation, kept as the oracle.
    enum Reference {
        static func format(_ value: Double) -> String? {
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

    @Test("the same text as the earlier formatter: random bit patterns, decimal values, integers, extremes")
    func sameAsReference() throws {
        var rng = SystemRandomNumberGenerator()
        var values: [Double] = [0, -0.0, 1, -1, 0.1, 1e21, 1e-7, 1e-6, 123e-20, 9_007_199_254_740_993, .leastNonzeroMagnitude, .greatestFiniteMagnitude,
                                -.leastNormalMagnitude, 5e-324, 1.7976931348623157e308, 0.000001, 0.0000001, 100, 1e20, 123456789012345680000, 72.5, 60.123456789]
        for _ in 0..<100_000 {
            let d = Double(bitPattern: rng.next())
            if d.isFinite { values.append(d) }
        }
        for i in 0..<20_000 {
            values.append(Double(i) / 1000)
            values.append(Double(Int.random(in: -1_000_000_000...1_000_000_000, using: &rng)) * pow(10, Double(Int.random(in: -30...30, using: &rng))))
        }
        for d in values {
            let mine = ECMAScriptNumber.format(d)
            #expect(mine == Reference.format(d), "bits \(String(d.bitPattern, radix: 16))")
            var w = CanonicalJSONWriter()
            try w.writeNumber(d)
            if d != d.rounded(.towardZero) || d.magnitude >= 9_007_199_254_740_992 {
                #expect(String(decoding: w.bytes, as: UTF8.self) == mine)
            }
        }
        #expect(ECMAScriptNumber.format(.nan) == nil && ECMAScriptNumber.format(-.infinity) == nil)
    }
}
