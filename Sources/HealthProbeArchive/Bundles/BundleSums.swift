import HealthProbeCanonical

/// What a bundle's lines add up to per sample type, counted as they are applied, so the
/// aggregates after them need not read the rows back:
/// - every type's change counts (appeared, disappeared, representation changed): each event
///   of the bundle's observation is one of its lines, so the counts are exact for any bundle;
/// - for a replica that held no sample before the bundle, each type's visible set summed as
///   its versions are inserted (`Aggregates.Sweep`, as a capture's first run of a type is).
///   Every range is then one the bundle opens at its observation, so the visible versions
///   of a type are its versions exactly when it opens as many ranges with a version as it
///   inserts versions (a range's version is its sample's, and a sample has one range per
///   version and observation); a range the bundle closes turns the sums off.
/// `ObservationChecks` recounts each summary from the ranges afterwards, as for any path.
struct BundleSums {
    struct PerType {
        let type: Int64
        var changes = Aggregates.ChangeCounts()
        var sweep: Aggregates.Sweep?
        var rangesWithVersion = 0
    }

    /// False when the visible sets are not summed (the replica held samples, or a range closed).
    private(set) var sweeping: Bool
    private var zone: (id: String?, offset: Int?)
    private var types: [PerType] = []
    private var last = 0
    /// The last unit a version named, as its bytes and as text (consecutive versions share it).
    private var unit: (bytes: [UInt8], text: String)?

    init(sweeping: Bool) { self.sweeping = sweeping }

    /// The observation's time zone, which the days of the sums are taken in.
    mutating func observed(zoneID: String?, zoneOffset: Int?) { zone = (zoneID, zoneOffset) }

    private mutating func slot(_ type: Int64) -> Int {
        if last < types.count, types[last].type == type { return last }
        if let i = types.firstIndex(where: { $0.type == type }) { last = i; return i }
        types.append(PerType(type: type, sweep: sweeping ? Aggregates.Sweep(zoneID: zone.id, zoneOffset: zone.offset) : nil))
        last = types.count - 1
        return last
    }

    mutating func event(type: Int64, kind: EventKind) {
        let i = slot(type)
        switch kind {
        case .appeared: types[i].changes.appeared += 1
        case .disappeared: types[i].changes.disappeared += 1
        case .representationChanged: types[i].changes.changed += 1
        case .deletedObject: break
        }
    }

    mutating func version(type: Int64, start: Double, end: Double, value: Double?, unit u: ItemText?, revision: Int64?) {
        guard sweeping else { return }
        let i = slot(type)
        var text: String?
        if let u {
            if let last = unit, u.equals(last.bytes) { text = last.text } else { text = u.string; unit = (Array(u.utf8), u.string) }
        }
        types[i].sweep?.add(start: start, end: end, value: value, unit: text, revision: revision)
    }

    mutating func rangeOpened(type: Int64, withVersion: Bool) {
        guard sweeping, withVersion else { return }
        types[slot(type)].rangesWithVersion += 1
    }

    mutating func rangeClosed() { sweeping = false }

    /// Each type's change counts (a type with none has zero of each).
    var changes: [Int64: Aggregates.ChangeCounts] {
        Dictionary(uniqueKeysWithValues: types.map { ($0.type, $0.changes) })
    }

    /// Each type's visible set, summed, where it is the type's versions exactly: a usable
    /// sweep has summed every version of its type.
    var visible: [Int64: Aggregates.Sweep] {
        guard sweeping else { return [:] }
        var out: [Int64: Aggregates.Sweep] = [:]
        for t in types {
            guard let sweep = t.sweep, sweep.usable, sweep.count > 0, sweep.count == t.rangesWithVersion else { continue }
            out[t.type] = sweep
        }
        return out
    }
}
