import Foundation

/// A seeded generator for randomized tests (SplitMix64). The seed comes from
/// `HP_TEST_SEED` when set, else from the system; it is printed, and tests put
/// it in their failure messages, so any failing run can be replayed exactly:
/// `HP_TEST_SEED=<seed> swift test --filter <test>`.
public struct TestRandom: RandomNumberGenerator, Sendable {
    public let seed: UInt64
    private var state: UInt64

    /// A generator with exactly this seed (nothing printed).
    public init(seed: UInt64) {
        self.seed = seed
        state = seed
    }

    /// A generator for the test `name`, seeded from `HP_TEST_SEED` or at random; prints the seed.
    public init(printingSeedFor name: String) {
        let fixed = ProcessInfo.processInfo.environment["HP_TEST_SEED"].flatMap { UInt64($0) }
        self.init(seed: fixed ?? UInt64.random(in: 0...UInt64.max))
        print("\(name): seed \(seed) (replay with HP_TEST_SEED=\(seed))")
    }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
