import Foundation
import NIOConcurrencyHelpers

/// Answers that cannot change, kept in memory (bounded, least recently used out):
/// an observation of a replica is fixed once applied, so its classification and a
/// type's days at it are the same on every request; cross-chain overlaps are keyed by
/// each chain's latest received bundle, so a new sync makes a new key. Measured:
/// `hp-bench web` had the all-chains type page at 3 s per request without it, starving
/// the other pages (measured 2026-11-24 at b06e973: git log -p docs/benchmarks.md).
final class ResultCache: Sendable {
    private struct State {
        var values: [String: (value: any Sendable, used: UInt64)] = [:]
        var clock: UInt64 = 0
    }
    private let state = NIOLockedValueBox(State())
    let capacity: Int

    init(capacity: Int = 512) { self.capacity = capacity }

    /// The cached value for `key`, else `make()`'s, kept.
    func value<T: Sendable>(_ key: String, _ make: () throws -> T) rethrows -> T {
        if let hit = state.withLockedValue({ s -> T? in
            // The entry first: a missing one cast to an optional `T` would be a hit holding nil.
            guard let entry = s.values[key], let v = entry.value as? T else { return nil }
            s.clock += 1
            s.values[key]?.used = s.clock
            return v
        }) { return hit }
        let made = try make()
        state.withLockedValue { s in
            s.clock += 1
            s.values[key] = (made, s.clock)
            if s.values.count > capacity, let oldest = s.values.min(by: { $0.value.used < $1.value.used })?.key {
                s.values[oldest] = nil
            }
        }
        return made
    }
}
