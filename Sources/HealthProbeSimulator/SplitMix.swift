/// Deterministic hashing of small integer tuples (SplitMix64 finalizer).
/// The simulator derives every value from (seed, type, day, index, salt).
public enum SplitMix {
    @inline(__always)
    public static func mix(_ x: UInt64) -> UInt64 {
        var z = x &+ 0x9E37_79B9_7F4A_7C15
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    @inline(__always)
    public static func hash(_ parts: UInt64...) -> UInt64 {
        var h: UInt64 = 0x1234_5678_9ABC_DEF0
        for p in parts { h = mix(h ^ mix(p)) }
        return h
    }

    /// A uniform double in [0, 1).
    @inline(__always)
    public static func unit(_ h: UInt64) -> Double { Double(h >> 11) / Double(1 << 53) }

    /// A deterministic UUID string (version-4 layout) from two hashes.
    public static func uuid(_ a: UInt64, _ b: UInt64) -> String {
        // Written straight into the string's storage: no arrays (generators make millions).
        String(unsafeUninitializedCapacity: 36) { out in
            let digits: StaticString = "0123456789ABCDEF"
            let hex = digits.utf8Start
            var o = 0
            for i in 0..<16 {
                var byte = UInt8(truncatingIfNeeded: (i < 8 ? a : b) >> (8 * UInt64(i & 7)))
                if i == 6 { byte = (byte & 0x0F) | 0x40 }
                if i == 8 { byte = (byte & 0x3F) | 0x80 }
                if i == 4 || i == 6 || i == 8 || i == 10 { out[o] = UInt8(ascii: "-"); o += 1 }
                out[o] = hex[Int(byte >> 4)]
                out[o + 1] = hex[Int(byte & 0xF)]
                o += 2
            }
            return o
        }
    }
}
