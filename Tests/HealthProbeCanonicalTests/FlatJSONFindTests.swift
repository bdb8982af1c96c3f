import Testing
@testable import HealthProbeCanonical

@Suite("Flat JSON member lookups")
struct FlatJSONFindTests {
    @Test("a lookup from any hint (before, inside, past the members, in another object) finds what a lookup from the start finds")
    func fromAnyHint() throws {
        let flat = try JSONParser.flat(Array(#"{"a":1,"b":{"a":2,"c":{"a":5}},"c":4,"d":[{"a":6}]}"#.utf8))
        let keys: [StaticString] = ["a", "b", "c", "d", "e", ""]
        let parents: [Int32] = [-1, -2, FlatJSON.nowhere] + (0..<Int32(flat.memberCount)).map { $0 }
        var found = 0
        for parent in parents {
            for key in keys {
                let expected = flat.find(key, in: parent)
                if expected != nil { found += 1 }
                for hint in Int32(-3)...Int32(flat.memberCount + 3) {
                    #expect(flat.find(key, in: parent, from: hint) == expected, "\(key) in \(parent) from \(hint)")
                }
            }
        }
        #expect(found == 8, "the top level's four keys, the inner objects' three, the one inside the array")
    }
}
