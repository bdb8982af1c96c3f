/// A 32-byte hash held inline (no heap string): how the capture path carries the
/// hashes it computes for each sample until they are bound as the archive's 32-byte
/// blobs. Its text form is 64 lower-case hex digits (`hex`), as at every edge.
/// Words are big-endian, so comparing words compares bytes.
public struct Digest32: Hashable, Sendable {
    public let w0, w1, w2, w3: UInt64

    /// Thirty-two zero bytes (a placeholder: no hash of HealthProbe's is zero).
    public static let zero = Digest32(w0: 0, w1: 0, w2: 0, w3: 0)

    private init(w0: UInt64, w1: UInt64, w2: UInt64, w3: UInt64) {
        self.w0 = w0; self.w1 = w1; self.w2 = w2; self.w3 = w3
    }

    /// The first 32 bytes of `bytes` (which has at least 32).
    @inline(__always)
    public init(bytes: UnsafeRawBufferPointer) {
        precondition(bytes.count >= 32)
        w0 = UInt64(bigEndian: bytes.loadUnaligned(fromByteOffset: 0, as: UInt64.self))
        w1 = UInt64(bigEndian: bytes.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
        w2 = UInt64(bigEndian: bytes.loadUnaligned(fromByteOffset: 16, as: UInt64.self))
        w3 = UInt64(bigEndian: bytes.loadUnaligned(fromByteOffset: 24, as: UInt64.self))
    }

    /// `head` (big-endian) then the first 24 bytes of `bytes` (which has at least 24).
    @inline(__always)
    public init(head: UInt64, bytes: UnsafeRawBufferPointer) {
        precondition(bytes.count >= 24)
        w0 = head
        w1 = UInt64(bigEndian: bytes.loadUnaligned(fromByteOffset: 0, as: UInt64.self))
        w2 = UInt64(bigEndian: bytes.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
        w3 = UInt64(bigEndian: bytes.loadUnaligned(fromByteOffset: 16, as: UInt64.self))
    }

    /// The digest of exactly 64 lower-case hex digits, or nil.
    public init?(hex: String) {
        var h = hex
        guard let d = h.withUTF8({ Digest32(hexDigits: $0) }) else { return nil }
        self = d
    }

    /// The digest of exactly 64 lower-case hex digits, or nil. Branch-free over the
    /// digits: the one hex decoder behind hashes bound, compared and looked up.
    public init?(hexDigits hex: UnsafeBufferPointer<UInt8>) {
        guard hex.count == 64 else { return nil }
        var words: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
        let bad: UInt8 = Swift.withUnsafeMutableBytes(of: &words) { out in
            var bad: UInt8 = 0
            for i in 0..<32 {
                let h = hex[2 &* i], l = hex[2 &* i &+ 1]
                bad |= ((h &- 0x30 < 10 ? 1 : 0) | (h &- 0x61 < 6 ? 1 : 0)) ^ 1
                bad |= ((l &- 0x30 < 10 ? 1 : 0) | (l &- 0x61 < 6 ? 1 : 0)) ^ 1
                // '0'...'9' are 0x30...0x39, 'a'...'f' are 0x61...0x66.
                out[i] = ((h & 0x0F) &+ 9 &* (h &>> 6)) &<< 4 | ((l & 0x0F) &+ 9 &* (l &>> 6))
            }
            return bad
        }
        guard bad == 0 else { return nil }
        self = Swift.withUnsafeBytes(of: &words) { Digest32(bytes: $0) }
    }

    /// The digest of the 64 lower-case hex digits at `range` of `bytes`, or nil.
    public init?(_ bytes: [UInt8], _ range: Range<Int>) {
        guard range.lowerBound >= 0, range.upperBound <= bytes.count,
              let d = bytes.withUnsafeBufferPointer({ Digest32(hexDigits: UnsafeBufferPointer(rebasing: $0[range])) }) else { return nil }
        self = d
    }

    /// Calls `body` with the 32 bytes.
    @inline(__always)
    public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        let words = (w0.bigEndian, w1.bigEndian, w2.bigEndian, w3.bigEndian)
        return try Swift.withUnsafeBytes(of: words) { try body($0) }
    }

    /// Writes the 64 lower-case hex digits at `out`.
    @inline(__always)
    public func writeHex(to out: UnsafeMutablePointer<UInt8>) {
        withUnsafeBytes { ArchiveHasher.writeHex($0, to: out) }
    }

    /// 64 lower-case hex digits.
    public var hex: String {
        String(unsafeUninitializedCapacity: 64) { out in
            writeHex(to: out.baseAddress!)
            return 64
        }
    }
}
