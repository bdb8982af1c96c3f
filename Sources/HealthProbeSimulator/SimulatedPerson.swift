import Foundation
import HealthProbeArchive

/// A deterministic synthetic person. Every sample, edit, deletion, late
/// insertion and consolidation is a pure function of (seed, type, day, index),
/// so the state visible at simulated day `T` never depends on how the
/// timeline was stepped through: the same seed gives the same history.
public struct SimulatedPerson: Sendable {
    public let seed: UInt64
    /// Day 0 of the timeline: 2025-01-06T00:00:00Z.
    public static let epoch: Double = 1_736_121_600
    public static let day: Double = 86_400
    /// Days after which high-frequency days are consolidated.
    public static let consolidationAge = 45
    /// How far back a capture must look for changes to already-visible days.
    static let changeWindow = consolidationAge + 1

    public init(seed: UInt64) { self.seed = seed }

    /// One sample slot of a type on a day.
    struct Slot { var day: Int; var index: Int; var source: SimulatedSource }

    /// What happens to a slot over time (days are timeline days).
    struct Fate {
        var visibleFrom: Int      // first T at which it is visible
        var editedAt: Int?        // T from which the edited version is visible
        var deletedAt: Int?       // T from which it is gone
    }

    private func h(_ t: SimulatedType, _ s: Slot, _ salt: UInt64) -> UInt64 {
        SplitMix.hash(seed, t.index, UInt64(s.day), UInt64(s.index), s.source.salt, salt)
    }

    func fate(_ t: SimulatedType, _ s: Slot) -> Fate {
        var f = Fate(visibleFrom: s.day + 1)
        let late = h(t, s, 10)
        if SplitMix.unit(late) < 0.004 { f.visibleFrom = s.day + 14 + Int(late % 30) }  // late-synced history
        let edit = h(t, s, 11)
        if SplitMix.unit(edit) < 0.01 { f.editedAt = max(f.visibleFrom, s.day + 1) + 1 + Int(edit % 5) }
        let del = h(t, s, 12)
        if SplitMix.unit(del) < 0.006 { f.deletedAt = max(f.visibleFrom, s.day + 1) + 2 + Int(del % 10) }
        if t.consolidates {
            let c = s.day + Self.consolidationAge
            f.deletedAt = min(f.deletedAt ?? c, c)
        }
        return f
    }

    /// Version visible at `T` (0 original, 1 edited), or nil when not visible.
    func version(_ f: Fate, at T: Int) -> Int? {
        guard T >= f.visibleFrom else { return nil }
        if let d = f.deletedAt, T >= d { return nil }
        if let e = f.editedAt, T >= e { return 1 }
        return 0
    }

    func slots(_ t: SimulatedType, day: Int) -> [Slot] {
        var out: [Slot] = []
        for src in t.sources {
            let n: Int
            switch t.shape {
            case .quantity(_, let perDay, _, _, _): n = perDay
            case .category(let perDay, _, _): n = perDay
            case .sleep: n = 8
            case .workout(let every): n = day % every == 0 ? 1 : 0
            }
            for i in 0..<n { out.append(Slot(day: day, index: i, source: src)) }
        }
        return out
    }

    /// The sample in slot `s` at `version`.
    func sample(_ t: SimulatedType, _ s: Slot, version: Int) -> CapturedSample {
        let dayStart = Self.epoch + Double(s.day) * Self.day
        let uuid = SplitMix.uuid(h(t, s, 1), h(t, s, 2))
        let r = SplitMix.unit(h(t, s, 3))
        var out: CapturedSample
        switch t.shape {
        case .quantity(let unit, let perDay, let duration, let range, let decimals):
            let step = Self.day / Double(perDay)
            let start = dayStart + Double(s.index) * step + (perDay > 1 ? Double(h(t, s, 4) % 60) : 8 * 3600)
            let scale = pow(10, Double(decimals))
            var value = ((range.lowerBound + r * (range.upperBound - range.lowerBound)) * scale).rounded() / scale
            if version == 1 { value = ((value * 1.1 + 1 / scale) * scale).rounded() / scale }
            out = CapturedSample(uuid: uuid, startDate: start, endDate: start + duration, valueKind: .quantity,
                                 numericValue: value, unit: unit)
            if t.index == 1 { out.metadata = ["HKMetadataKeyHeartRateMotionContext": .int(Int(h(t, s, 5) % 2))] }
        case .category(_, let duration, let values):
            let start = dayStart + 7 * 3600 + Double(s.index) * 3600
            let value = values[Int(h(t, s, 4) % UInt64(values.count))]
            out = CapturedSample(uuid: uuid, startDate: start, endDate: start + duration, valueKind: .category,
                                 categoryValue: version == 1 ? (value == 0 ? 1 : 0) : value)
        case .sleep:
            // Eight stages from 22:00 UTC: in bed, then core/deep/REM/awake cycles.
            let stages = [0, 3, 4, 3, 5, 2, 3, 5]
            let bed = dayStart + 22 * 3600
            let start = s.index == 0 ? bed : bed + 600 + Double(s.index - 1) * 3600
            let end = s.index == 0 ? bed + 8.5 * 3600 : start + 3300
            out = CapturedSample(uuid: uuid, startDate: start, endDate: end, valueKind: .category,
                                 categoryValue: version == 1 && s.index > 0 ? 1 : stages[s.index])
        case .workout:
            let start = dayStart + 17 * 3600 + Double(h(t, s, 4) % 1800)
            let minutes = 30 + Double(h(t, s, 5) % 31)
            let energy = (minutes * (9 + r * 3)).rounded()
            out = CapturedSample(uuid: uuid, startDate: start, endDate: start + minutes * 60, valueKind: .workout,
                                 numericValue: version == 1 ? energy + 25 : energy, unit: "kcal", workoutActivityType: 37,
                                 durationSeconds: minutes * 60,
                                 metadata: ["HKIndoorWorkout": .int(0), "HKTimeZone": .string("Europe/Berlin")])
        }
        out.source = s.source.descriptor
        out.device = s.source.device
        return out
    }

    /// The consolidated replacements of a high-frequency day: one per hour,
    /// mean (rates) or sum (amounts) of the originals that hour.
    func consolidated(_ t: SimulatedType, day: Int) -> [CapturedSample] {
        guard t.consolidates, case .quantity(let unit, _, _, _, _) = t.shape else { return [] }
        var sums = [Double](repeating: 0, count: 24)
        var counts = [Int](repeating: 0, count: 24)
        let dayStart = Self.epoch + Double(day) * Self.day
        for s in slots(t, day: day) {
            let f = fate(t, s)
            // What was visible just before consolidation is what gets consolidated.
            guard let v = version(f, at: day + Self.consolidationAge - 1) else { continue }
            let x = sample(t, s, version: v)
            let hour = min(23, Int((x.startDate - dayStart) / 3600))
            sums[hour] += x.numericValue ?? 0
            counts[hour] += 1
        }
        let isRate = unit.contains("/")
        var out: [CapturedSample] = []
        for hour in 0..<24 where counts[hour] > 0 {
            let value = isRate ? (sums[hour] / Double(counts[hour])).rounded() : (sums[hour] * 1000).rounded() / 1000
            let start = dayStart + Double(hour) * 3600
            let uuid = SplitMix.uuid(SplitMix.hash(seed, t.index, UInt64(day), UInt64(hour), 99), SplitMix.hash(seed, t.index, UInt64(day), UInt64(hour), 98))
            var x = CapturedSample(uuid: uuid, startDate: start, endDate: start + 3600, valueKind: .quantity, numericValue: value, unit: unit)
            x.source = SimulatedSource.watch.descriptor
            x.device = SimulatedSource.watch.device
            out.append(x)
        }
        return out
    }

    /// Changes of type `t` between simulated days `from` (nil: nothing seen yet) and `to`:
    /// samples to add (new or edited) and UUIDs deleted.
    public func delta(_ t: SimulatedType, from: Int?, to: Int, added: (CapturedSample) throws -> Void, deleted: (String) throws -> Void) rethrows {
        let firstDay = from.map { max(0, $0 - Self.changeWindow - 45) } ?? 0
        guard to > firstDay else { return }
        for day in firstDay..<to {
            for s in slots(t, day: day) {
                let f = fate(t, s)
                let before = from.flatMap { version(f, at: $0) }
                let after = version(f, at: to)
                if let a = after, a != before { try added(sample(t, s, version: a)) }
                if before != nil && after == nil { try deleted(SplitMix.uuid(h(t, s, 1), h(t, s, 2))) }
            }
            if t.consolidates {
                let c = day + Self.consolidationAge
                if (from ?? Int.min) < c && to >= c { for x in consolidated(t, day: day) { try added(x) } }
            }
        }
    }

    /// Everything of type `t` visible at simulated day `at`, in a stable order.
    public func visible(_ t: SimulatedType, at: Int, emit: (CapturedSample) throws -> Void) rethrows {
        guard at > 0 else { return }
        for day in 0..<at {
            for s in slots(t, day: day) {
                if let v = version(fate(t, s), at: at) { try emit(sample(t, s, version: v)) }
            }
            if t.consolidates && at >= day + Self.consolidationAge { for x in consolidated(t, day: day) { try emit(x) } }
        }
    }

    /// The person's time zone at day `T` (travels to New York for 30 days of every 120).
    public func timeZone(at T: Int) -> TimeZone {
        (T / 30) % 4 == 2 ? TimeZone(identifier: "America/New_York")! : TimeZone(identifier: "Europe/Berlin")!
    }

    /// When a capture at day `T` happens (06:00 UTC).
    public static func captureTime(at T: Int) -> Double { epoch + Double(T) * day + 6 * 3600 }
}
