import Testing
@testable import HealthProbeCanonical

@Suite("Lower-case hex checks")
struct LowerHexTests {
    /// The definition the word-at-a-time check must agree with.
    static func expected(_ bytes: [UInt8]) -> Bool {
        bytes.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
    }

    @Test("every byte value, at every position of a hash and of a short tail, as one byte at a time decides")
    func everyByteAtEveryPosition() {
        let valid = Array("0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef".utf8)
        // Inside a larger buffer and at an odd offset: the words are read unaligned.
        for (count, offset) in [(64, 3), (13, 0), (8, 1)] {
            for position in 0..<count {
                for byte in 0...255 {
                    var buffer = [UInt8](repeating: 0x7A, count: offset) + Array(valid.prefix(count)) + [0x7A]
                    buffer[offset + position] = UInt8(byte)
                    let range = offset..<offset + count
                    #expect(ArchiveHasher.isLowerHex(buffer, range, count: count) == Self.expected(Array(buffer[range])),
                            "count \(count), byte \(byte) at \(position)")
                }
            }
        }
    }

    @Test("a range of another length, or outside the bytes, is not a hash")
    func lengthsAndBounds() {
        let hex = Array(String(repeating: "a1", count: 40).utf8)
        #expect(ArchiveHasher.isLowerHex(hex, 0..<64))
        #expect(!ArchiveHasher.isLowerHex(hex, 0..<63))
        #expect(!ArchiveHasher.isLowerHex(hex, 40..<104))
        #expect(!ArchiveHasher.isLowerHex(Array(String(repeating: "A1", count: 32).utf8), 0..<64))
    }
}
