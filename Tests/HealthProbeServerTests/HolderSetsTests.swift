import Testing
@testable import HealthProbeServer

/// The household merge's sets of holding chains: bits over as many 64-bit words as there
/// are chains of a type (a second word from the 65th chain on), and the pairs inside them.
@Suite("Household merge: sets of holding chains")
struct HolderSetsTests {
    @Test("70 streams in two words: each set's count goes to every pair inside it (as the chains' own indexes); a pair in two sets gets the sum; a set of one gives no pair")
    func pairsAcrossTwoWords() {
        let holders = (0..<70).map { $0 * 2 }
        func set(_ streams: [Int]) -> [UInt64] {
            var s = [UInt64](repeating: 0, count: 2)
            for x in streams { HolderSets.insert(x, into: &s) }
            return s
        }
        let a = set([0, 63, 64, 69]), b = set([63, 64]), c = set([1])
        #expect(a[0] == (1 | 1 << 63) && a[1] == (1 | 1 << 5))
        #expect(HolderSets.contains(a, 64) && HolderSets.contains(a, 69) && !HolderSets.contains(a, 65) && !HolderSets.contains(a, 200))
        let pairs = HolderSets.pairs([a: 5, b: 2, c: 7], holders: holders)
        var expected: [HolderSets.Pair: Int] = [:]
        for (x, y) in [(0, 63), (0, 64), (0, 69), (63, 69), (64, 69)] { expected[HolderSets.Pair(a: x * 2, b: y * 2)] = 5 }
        expected[HolderSets.Pair(a: 126, b: 128)] = 7
        #expect(pairs == expected)
    }
}
