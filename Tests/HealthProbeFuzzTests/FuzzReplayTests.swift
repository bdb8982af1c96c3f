import Foundation
import HealthProbeTestSupport
import Testing
@testable import HealthProbeFuzz

/// Every fuzz target over its seeds (made from Protocol/vectors) and over every
/// finding kept in Protocol/vectors/fuzz/: none may fail. libFuzzer itself runs
/// from scripts/fuzz.
@Suite("Fuzz targets replayed on their seeds and kept findings", .serialized)
struct FuzzReplayTests {
    @Test("no seed or kept finding fails its target", arguments: FuzzTarget.allCases)
    func replay(_ target: FuzzTarget) throws {
        let seeds = try FuzzSeeds.seeds(target, vectors: vectorURL(""))
        #expect(seeds.count >= 10, "\(target): \(seeds.count) seeds")
        for seed in seeds {
            #expect(target.run(seed.bytes) == nil, "\(target) \(seed.name)")
        }
    }

    @Test("the apply target reaches acceptance (and its checks) on the valid bundle vectors")
    func applyAccepts() throws {
        let before = BundleFuzzer.accepted
        for seed in try FuzzSeeds.seeds(.apply, vectors: vectorURL("")) where seed.name.hasSuffix("observation-1.jsonl") || seed.name.contains("chain/1.jsonl") {
            #expect(FuzzTarget.apply.run(seed.bytes) == nil, "\(seed.name)")
        }
        #expect(BundleFuzzer.accepted - before == 2)
    }

    @Test("the targets survive arbitrary bytes")
    func randomBytes() {
        var rng = TestRandom(seed: 11)
        for target in FuzzTarget.allCases {
            for _ in 0..<200 {
                let bytes = (0..<Int.random(in: 0...300, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
                #expect(target.run(bytes) == nil, "\(target)")
            }
        }
    }
}
