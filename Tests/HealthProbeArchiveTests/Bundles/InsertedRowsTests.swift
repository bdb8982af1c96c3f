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

    @Test("outside the run a lookup answers only for the exact key it was given; other keys fall back to SQL")
    func exactLookups() {
        var rows = InsertedRows()
        rows.inserted(sample: 1, type: 1, fingerprint: Self.hash(Self.hashB))
        rows.inserted(sample: 7, type: 1, fingerprint: Self.hash(Self.hashA))  // a gap: outside the run
        #expect(rows.sample(type: 1, fingerprint: Self.hash(Self.hashA)) == 7)
        #expect(rows.sample(type: 2, fingerprint: Self.hash(Self.hashA)) == nil)
        #expect(rows.sample(type: 1, fingerprint: Self.hash(Self.hashB)) == nil, "the run's sample is found by its rowid, else by SQL")
        #expect(rows.sample(type: 1, fingerprint: nil) == nil)
        rows.inserted(version: 11, sample: 7, payloadHash: Self.hash(Self.hashB))
        #expect(rows.version(sample: 7, payloadHash: Self.hash(Self.hashB)) == 11)
        #expect(rows.version(sample: 7, payloadHash: Self.hash(Self.hashA)) == nil, "an older version of the sample is not this one")
        #expect(rows.version(sample: 8, payloadHash: Self.hash(Self.hashB)) == nil)
    }

    @Test("past its limits it remembers nothing more")
    func bounded() {
        var rows = InsertedRows(limit: 2, runLimit: 1)
        for i in [0, 5, 6, 7] { rows.inserted(sample: Int64(i), type: Int64(i), fingerprint: Self.hash(Self.hashA)) }
        #expect(rows.inRun(0) && !rows.inRun(1))
        #expect(rows.sample(type: 5, fingerprint: Self.hash(Self.hashA)) == 5)
        #expect(rows.sample(type: 6, fingerprint: Self.hash(Self.hashA)) == 6)
        #expect(rows.sample(type: 7, fingerprint: Self.hash(Self.hashA)) == nil)
        // Limit 0 keeps nothing, the run included: every lookup goes to SQL.
        var none = InsertedRows(limit: 0)
        none.inserted(sample: 1, type: 1, fingerprint: Self.hash(Self.hashA))
        #expect(!none.inRun(1))
        #expect(none.sample(type: 1, fingerprint: Self.hash(Self.hashA)) == nil)
    }

    static let a = hash(hashA), b = hash(hashB)
    /// A's digits but the last: equal in their first 16 bytes (all an index holds) and more.
    static let nearA = hash(String(hashA.dropLast()) + "e")

    /// Samples of type 1 inserted as rowids `first` (fingerprint A) and `second` (fingerprint B).
    static func two(_ first: Int64, _ second: Int64) -> InsertedRows {
        var rows = InsertedRows()
        rows.inserted(sample: first, type: 1, fingerprint: a)
        rows.inserted(sample: second, type: 1, fingerprint: b)
        return rows
    }

    @Test("the run of consecutive rowids answers a guessed rowid only for its exact key")
    func run() {
        var rows = Self.two(10, 11)
        let (a, b) = (Self.a, Self.b)
        #expect(rows.inRun(10) && rows.inRun(11))
        #expect(!rows.inRun(9) && !rows.inRun(12) && !rows.inRun(0))
        #expect(rows.sample(at: 10, type: 1, fingerprint: a) == 10)
        #expect(rows.sample(at: 11, type: 1, fingerprint: b) == 11)
        #expect(rows.sample(at: 10, type: 1, fingerprint: b) == nil, "another fingerprint at that rowid")
        #expect(rows.sample(at: 10, type: 2, fingerprint: a) == nil, "another type at that rowid")
        #expect(rows.sample(at: 10, type: 1, fingerprint: nil) == nil)
        #expect(Self.nearA != nil && Self.nearA != a)
        #expect(rows.sample(at: 10, type: 1, fingerprint: Self.nearA) == nil, "a fingerprint that differs in its last digit")
        #expect(rows.sample(type: 1, fingerprint: Self.nearA) == nil)
        #expect(rows.sample(at: 12, type: 1, fingerprint: a) == nil, "past the run")
        // A miss at the guessed rowid is left to SQL: the run keeps tags, not keys to look up.
        #expect(rows.sample(type: 1, fingerprint: b) == nil)
        // Versions of the run's samples are kept by slot, exact on the payload hash.
        rows.inserted(version: 40, sample: 11, payloadHash: a)
        #expect(rows.version(sample: 11, payloadHash: a) == 40)
        #expect(rows.version(sample: 11, payloadHash: b) == nil)
        #expect(rows.version(sample: 11, payloadHash: Self.nearA) == nil, "a payload hash that differs in its last digit")
        #expect(rows.version(sample: 10, payloadHash: a) == nil, "no version of that sample yet")
        #expect(rows.version(sample: 10, payloadHash: Digest32.zero) == nil, "nor one of hash zero (an empty slot's)")
        rows.inserted(version: 41, sample: 11, payloadHash: b)
        #expect(rows.version(sample: 11, payloadHash: b) == 41, "the sample's newest version")
        #expect(rows.version(sample: 11, payloadHash: a) == nil)
        // A version of a sample outside the run, as before.
        rows.inserted(version: 42, sample: 3, payloadHash: a)
        #expect(rows.version(sample: 3, payloadHash: a) == 42)
    }

    @Test("a gap in the rowids ends the run; what follows is found by key alone")
    func gapEndsRun() {
        var rows = Self.two(5, 7)
        let (a, b) = (Self.a, Self.b)
        #expect(rows.inRun(5) && !rows.inRun(6) && !rows.inRun(7))
        #expect(rows.sample(at: 7, type: 1, fingerprint: b) == nil)
        #expect(rows.sample(type: 1, fingerprint: b) == 7)
        // Nothing joins the run once it ended, even a rowid that would follow it.
        rows.inserted(sample: 6, type: 2, fingerprint: a)
        #expect(!rows.inRun(6))
        #expect(rows.sample(type: 2, fingerprint: a) == 6)
        // A sample without a fingerprint is not remembered, and ends the run too.
        var other = InsertedRows()
        other.inserted(sample: 1, type: 1, fingerprint: a)
        other.inserted(sample: 2, type: 1, fingerprint: nil)
        other.inserted(sample: 3, type: 1, fingerprint: b)
        #expect(other.inRun(1) && !other.inRun(2) && !other.inRun(3))
        #expect(other.sample(type: 1, fingerprint: b) == 3)
    }

    @Test("the run stops at its limit; the samples after it are kept by key")
    func runBounded() {
        var rows = InsertedRows(limit: 10, runLimit: 2)
        for i in 1...3 { rows.inserted(sample: Int64(i), type: Int64(i), fingerprint: Self.hash(Self.hashA)) }
        #expect(rows.inRun(1) && rows.inRun(2) && !rows.inRun(3))
        #expect(rows.sample(at: 3, type: 3, fingerprint: Self.hash(Self.hashA)) == nil)
        #expect(rows.sample(type: 3, fingerprint: Self.hash(Self.hashA)) == 3)
        // Nothing joins the ended run, even the rowid that would follow it.
        rows.inserted(sample: 4, type: 4, fingerprint: Self.hash(Self.hashA))
        #expect(!rows.inRun(4) && rows.sample(type: 4, fingerprint: Self.hash(Self.hashA)) == 4)
    }

    @Test("a million samples' run: each slot answers its own key, and not a key differing from it in any one bit, or in its type")
    func largeRun() {
        var rows = InsertedRows()
        let n = 1_000_000
        /// Sample `i`'s fingerprint: `i` in the last eight bytes, with `flip` (a bit number) inverted.
        func fp(_ i: Int, flip: Int? = nil) -> Digest32 {
            var bytes = [UInt8](repeating: 0x5a, count: 24) + withUnsafeBytes(of: UInt64(i).bigEndian, Array.init)
            if let flip { bytes[flip / 8] ^= 1 << (flip % 8) }
            return bytes.withUnsafeBytes { Digest32(bytes: $0) }
        }
        for i in 0..<n { rows.inserted(sample: Int64(i + 1), type: 1, fingerprint: fp(i)) }
        #expect(rows.inRun(1) && rows.inRun(Int64(n)) && !rows.inRun(Int64(n + 1)))
        var (right, wrong) = (0, 0)
        for i in stride(from: 0, to: n, by: 9_973) {
            if rows.sample(at: Int64(i + 1), type: 1, fingerprint: fp(i)) == Int64(i + 1) { right += 1 }
            if rows.sample(at: Int64(i + 1), type: 2, fingerprint: fp(i)) != nil { wrong += 1 }
            for bit in 0..<256 where rows.sample(at: Int64(i + 1), type: 1, fingerprint: fp(i, flip: bit)) != nil { wrong += 1 }
        }
        #expect(right == (n + 9_972) / 9_973 && wrong == 0)
    }
}
