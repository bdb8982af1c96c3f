import GRDB

/// Compares the stored visibility ranges of a set of samples with the ranges their
/// events derive (database-design.md section 7; `ArchiveVerifier` check 6), one
/// sample at a time: two statements ordered by sample are stepped side by side and
/// each sample's few rows are rebuilt in memory. Nothing is sorted or copied by
/// SQLite, so a million touched samples cost two index walks (measured: 3.3 s of
/// a 1M-sample bundle's apply as one SQL window and two EXCEPTs, see
/// docs/decisions/2026-11-24-compact-schema-v8.md, "Checks of a large bundle").
/// Also finds a sample with more than one open range.
struct RangeRebuild {
    /// A range as the comparison sees it.
    struct Range: Hashable, Comparable {
        var version: Int64?
        var first: Int64
        var last: Int64?

        static func < (a: Range, b: Range) -> Bool {
            (a.first, a.version ?? -1, a.last ?? .max) < (b.first, b.version ?? -1, b.last ?? .max)
        }
    }

    /// One event that opens, replaces or closes a range.
    struct Event {
        var observation: Int64
        /// `appeared` sorts after the other kinds of its observation (a sample that
        /// disappears and appears again in one observation opens a new range).
        var appeared: Bool
        var opens: Bool
        var id: Int64
        var version: Int64?
    }

    /// What differs, in the words of `ObservationChecks`, at most `limit` of each kind.
    var ranges: [String] = []
    var openRanges: [String] = []

    /// `events` yields `sample_id, observation_id, event_kind, version_id, id` of the
    /// samples' events of kinds `appeared`, `representation_changed` and `disappeared`;
    /// `stored` yields `sample_id, version_id, first_observation_id,
    /// last_observation_id` of their stored ranges; both ordered by sample.
    static func compare(_ db: Database, events: FastStatement, stored: FastStatement, arguments: [FastStatement.Value], limit: Int = 5) throws -> RangeRebuild {
        var out = RangeRebuild()
        events.bind(arguments)
        stored.bind(arguments)
        defer { events.reset(); stored.reset() }
        var hasEvent = try events.step(db), hasRange = try stored.step(db)
        var evs: [Event] = [], have: [Range] = [], want: [Range] = []
        while hasEvent || hasRange {
            let sample = min(hasEvent ? events.int(0) ?? 0 : .max, hasRange ? stored.int(0) ?? 0 : .max)
            evs.removeAll(keepingCapacity: true)
            have.removeAll(keepingCapacity: true)
            want.removeAll(keepingCapacity: true)
            while hasEvent, events.int(0) == sample {
                let kind = events.int(2)
                let appeared = kind == EventKind.appeared.code
                let opens = appeared || kind == EventKind.representationChanged.code
                evs.append(Event(observation: events.int(1) ?? 0, appeared: appeared, opens: opens, id: events.int(4) ?? 0, version: events.int(3)))
                hasEvent = try events.step(db)
            }
            while hasRange, stored.int(0) == sample {
                have.append(Range(version: stored.int(1), first: stored.int(2) ?? 0, last: stored.int(3)))
                hasRange = try stored.step(db)
            }
            evs.sort { ($0.observation, $0.appeared ? 1 : 0, $0.id) < ($1.observation, $1.appeared ? 1 : 0, $1.id) }
            for (i, e) in evs.enumerated() where e.opens {
                want.append(Range(version: e.version, first: e.observation, last: i + 1 < evs.count ? evs[i + 1].observation : nil))
            }
            let open = have.lazy.filter { $0.last == nil }.count
            if open > 1, out.openRanges.count < limit { out.openRanges.append("sample \(sample) has \(open) open ranges") }
            // Compared as sets, as SQL's EXCEPT did (a sample's stored ranges are unique by key).
            have.sort()
            want.sort()
            if have == want || (have.count < want.count && have == Self.unique(want)) { continue }
            let (h, w) = (Set(have), Set(want))
            for r in h.subtracting(w).sorted() where out.ranges.count < limit {
                out.ranges.append("sample \(sample): the range \(describe(r)) is stored but not derived from the events")
            }
            for r in w.subtracting(h).sorted() where out.ranges.count < limit {
                out.ranges.append("sample \(sample): the range \(describe(r)) is derived from the events but not stored")
            }
            if out.ranges.count >= limit && out.openRanges.count >= limit { break }
        }
        return out
    }

    /// `sorted` without its repeated elements.
    static func unique(_ sorted: [Range]) -> [Range] {
        var out: [Range] = []
        for r in sorted where out.last != r { out.append(r) }
        return out
    }

    static func describe(_ r: Range) -> String {
        "[\(r.first), \(r.last.map(String.init) ?? "open"))"
    }

    /// Every sample's events that open, replace or close a range, in sample order.
    static let allEvents = """
        SELECT e.sample_id, e.observation_id, e.event_kind, e.version_id, e.id
        FROM sample_observation_events e INDEXED BY idx_events_sample
        WHERE e.event_kind IN \(EventKind.rangeKindsSQL)
        ORDER BY e.sample_id
        """
    /// Every stored range, in sample order.
    static let allRanges = """
        SELECT g.sample_id, g.version_id, g.first_observation_id, g.last_observation_id
        FROM sample_visibility_ranges g INDEXED BY sqlite_autoindex_sample_visibility_ranges_1
        ORDER BY g.sample_id
        """
}
