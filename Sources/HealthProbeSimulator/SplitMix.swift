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
        let hex = Array("0123456789ABCDEF".utf8)
        var out = [UInt8]()
        out.reserveCapacity(36)
        var bytes = [UInt8](repeating: 0, count: 16)
        for i in 0..<8 { bytes[i] = UInt8(truncatingIfNeeded: a >> (8 * UInt64(i))) }
        for i in 0..<8 { bytes[8 + i] = UInt8(truncatingIfNeeded: b >> (8 * UInt64(i))) }
        bytes[6] = (bytes[6] & 0x0F) | 0x40
        bytes[8] = (bytes[8] & 0x3F) | 0x80
        for (i, byte) in bytes.enumerated() {
            if i == 4 || i == 6 || i == 8 || i == 10 { out.append(UInt8(ascii: "-")) }
            out.append(hex[Int(byte >> 4)])
            out.append(hex[Int(byte & 0xF)])
        }
        return String(decoding: out, as: UTF8.self)
    }
}
