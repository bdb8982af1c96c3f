import HealthProbeCanonical
import Testing
@testable import HealthProbeArchive
import HealthProbeTestSupport

@Suite("Rows a bundle inserted, remembered for its later lines")
struct InsertedRowsTests {
    static let hashA = String(repeating: "0123456789abcdef", count: 4)
    static let hashB = String(repeating: "fedcba9876543210", count: 4)

    static func hash(_ text: String) -> Digest32? {
        let bytes = Array(("x\"" + text + "\"").utf8)
        return Digest32(bytes, 2..<(2 + text.utf8.count))
    }

    @Test("only 64 lower-case hex digits make a key")
    func keys() {
        #expect(Self.hash(Self.hashA) != nil)
        #expect(Self.hash(Self.hashA) == Self.hash(Self.hashA))
        #expect(Self.hash(Self.hashA) != Self.hash(Self.hashB))
        #expect(Self.hash(Self.hashA.uppercased()) == nil, "upper case is another text: left to SQL")
        #expect(Self.hash(String(Self.hashA.dropLast())) == nil)
        #expect(Self.hash(Self.hashA + "0") == nil)
        #expect(Self.hash(String(Self.hashA.dropLast()) + "g") == nil)
        // The digits' values, and every byte that is not a lower-case hex digit, at any position.
        let a = Self.hash(Self.hashA)!, b = Self.hash(Self.hashB)!
        #expect([a.w0, a.w1, a.w2, a.w3] == [UInt64](repeating: 0x0123_4567_89ab_cdef, count: 4))
        #expect([b.w0, b.w3] == [0xfedc_ba98_7654_3210, 0xfedc_ba98_7654_3210])
        let digits = Set("0123456789abcdef".utf8)
        for byte in UInt8.min...UInt8.max where !digits.contains(byte) {
            for position in [0, 17, 63] {
                var text = Array(Self.hashA.utf8)
                text[position] = byte
                let bytes = Array("x\"".utf8) + text
                #expect(Digest32(bytes, 2..<66) == nil, "byte \(byte) at \(position)")
            }
        }
    }

    @Test("a lookup answers only for the exact key it was given; other keys fall back to SQL")
    func exactLookups() {
        var rows = InsertedRows()
        rows.inserted(sample: 7, type: 1, fingerprint: Self.hash(Self.hashA))
        #expect(rows.sample(type: 1, fingerprint: Self.hash(Self.hashA)) == 7)
        #expect(rows.sample(type: 2, fingerprint: Self.hash(Self.hashA)) == nil)
        #expect(rows.sample(type: 1, fingerprint: Self.hash(Self.hashB)) == nil)
        #expect(rows.sample(type: 1, fingerprint: nil) == nil)
        rows.inserted(version: 11, sample: 7, payloadHash: Self.hash(Self.hashB))
        #expect(rows.version(sample: 7, payloadHash: Self.hash(Self.hashB)) == 11)
        #expect(rows.version(sample: 7, payloadHash: Self.hash(Self.hashA)) == nil, "an older version of the sample is not this one")
        #expect(rows.version(sample: 8, payloadHash: Self.hash(Self.hashB)) == nil)
    }

    @Test("past its limit it remembers nothing more")
    func bounded() {
        var rows = InsertedRows(limit: 2)
        for i in 0..<3 { rows.inserted(sample: Int64(i), type: Int64(i), fingerprint: Self.hash(Self.hashA)) }
        #expect(rows.sample(type: 1, fingerprint: Self.hash(Self.hashA)) == 1)
        #expect(rows.sample(type: 2, fingerprint: Self.hash(Self.hashA)) == nil)
    }
}
