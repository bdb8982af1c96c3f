/// Kept bundle files as the server wrote them before 2026-12-01, for tests of the older form:
/// each member's `HP` subfield held only the member's length (XLEN 8, LEN 4), where members
/// now also record their size, Adler-32, lines and last byte (13 bytes more).
public enum FormerGzipMembers {
    /// `bytes` (members as `GzipParts.appendMember` writes them) with the first `count`
    /// members (all by default) rewritten in the former form, their data unchanged.
    public static func rewrite(_ bytes: [UInt8], count: Int = .max) -> [UInt8] {
        var out: [UInt8] = []
        var (at, n) = (0, 0)
        while at < bytes.count {
            let total = Int(bytes[at + 16]) | Int(bytes[at + 17]) << 8 | Int(bytes[at + 18]) << 16 | Int(bytes[at + 19]) << 24
            if n < count {
                let shorter = UInt32(total - 13)
                out += bytes[at..<(at + 10)] + [8, 0, UInt8(ascii: "H"), UInt8(ascii: "P"), 4, 0]
                out += (0..<4).map { UInt8(truncatingIfNeeded: shorter >> (8 * $0)) }
                out += bytes[(at + 33)..<(at + total)]
            } else {
                out += bytes[at..<(at + total)]
            }
            at += total
            n += 1
        }
        return out
    }
}
