import Testing
@testable import HealthProbeWeb

@Suite("Result cache")
struct ResultCacheTests {
    @Test("a key is computed once; past capacity the least recently used goes")
    func lru() throws {
        let cache = ResultCache(capacity: 2)
        var made = 0
        func get(_ k: String) -> String { cache.value(k) { made += 1; return k + "!" } }
        #expect(get("a") == "a!" && get("a") == "a!" && made == 1)
        _ = get("b")
        _ = get("a")          // a is now more recent than b
        _ = get("c")          // evicts b
        #expect(made == 3)
        _ = get("a")
        #expect(made == 3)
        _ = get("b")
        #expect(made == 4)
        // A value of another type under the same key is not returned as this one.
        #expect(cache.value("a") { 7 } == 7)
        // An optional value: a key never made is made (not taken for a kept nil), and a kept nil is kept.
        var optionalMade = 0
        func maybe(_ k: String, _ v: Int?) -> Int? { cache.value(k) { () -> Int? in optionalMade += 1; return v } }
        #expect(maybe("o", 5) == 5 && optionalMade == 1)
        #expect(maybe("n", nil) == nil && maybe("n", 9) == nil && optionalMade == 2)
    }
}
