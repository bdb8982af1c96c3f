import Foundation
import HealthProbeCanonical

/// The rules between the items of one bundle (Protocol/bundles.md section 4.5),
/// checked from its bytes alone while it streams: what one item says must agree
/// with what the others say. Memory grows with the bundle's sample types, never
/// with its samples.
struct BundleRules {
    /// The header's sequence.
    var sequence = 0
    /// The observation's `observed_at`.
    private var observedAt: Double?
    private var observationStatus: ObservationStatus?

    /// A type named by a `sample_type` item: its category, the events of its type
    /// counted so far, and its run's status once its `type_run` was read.
    private struct TypeState {
        var name: [UInt8]
        var category: ValueKind?
        var inserted = 0
        var deleted = 0
        var run: TypeRunStatus?
    }
    private var types: [TypeState] = []
    private var index: [[UInt8]: Int] = [:]
    /// The type found last: items of one kind mostly name the same type one after another.
    private var last = -1
    private var runStatuses: [TypeRunStatus] = []

    /// Checks `item` (its members already checked: `BundleItem.decode`).
    mutating func check(_ item: BundleItem, line: Int) throws(BundleError) {
        func fail(_ why: String) -> BundleError { BundleError(.inconsistent, line: line, "line \(line): \(item.kind.rawValue): \(why)") }
        switch item {
        case .observation(let o):
            observedAt = o.observedAt
            observationStatus = o.status
        case .sampleType(let t):
            let name = Array(t.typeIdentifier.utf8)
            if let previous = types.last?.name, !previous.lexicographicallyPrecedes(name) {
                throw BundleError(.order, line: line, "line \(line): sample_type items must be in increasing byte order of type_identifier, each type once")
            }
            index[name] = types.count
            types.append(TypeState(name: name, category: t.category))
        case .newSample(let n):
            // A sample, its version and its appeared event at once (its dates are the observation's by definition).
            guard let t = find(n.payload.type) else { throw fail("payload.type names a type with no sample_type item") }
            if let category = types[t].category, n.payload.valueKind != category {
                throw fail("payload.value_kind differs from its type's sample_type category \(category.rawValue)")
            }
            types[t].inserted += 1
        case .sample(let s):
            guard find(s.typeIdentifier) != nil else { throw fail("type_identifier names a type with no sample_type item") }
            guard s.firstSeenAt == observedAt else { throw fail("first_seen_at differs from the observation's observed_at") }
        case .version(let v):
            guard let t = find(v.sample.type) else { throw fail("sample.type names a type with no sample_type item") }
            if let category = types[t].category, v.payload.valueKind != category {
                throw fail("payload.value_kind differs from its type's sample_type category \(category.rawValue)")
            }
        case .event(let e):
            guard let t = find(e.sample.type) else { throw fail("sample.type names a type with no sample_type item") }
            guard e.observedAt == observedAt else { throw fail("observed_at differs from the observation's observed_at") }
            switch e.eventKind {
            case .appeared, .representationChanged: types[t].inserted += 1
            case .disappeared, .deletedObject: types[t].deleted += 1
            }
        case .rangeOpen(let r):
            guard r.firstSeenAt == observedAt else { throw fail("first_seen_at differs from the observation's observed_at") }
        case .rangeClose(let r):
            // Section 4.3: a rule between the item and its header.
            if r.firstSequence >= Int64(sequence) {
                throw BundleError(.field, line: line, "line \(line): range_close: first_sequence \(r.firstSequence) is not lower than the bundle's sequence \(sequence)")
            }
            if let observedAt, r.lastSeenAt > observedAt { throw fail("last_seen_at is after the observation's observed_at") }
        case .typeRun(let run):
            guard let t = find(run.typeIdentifier) else { throw fail("type_identifier names a type with no sample_type item") }
            guard types[t].run == nil else { throw fail("a second type_run of \(Self.printable(types[t].name))") }
            types[t].run = run.status
            runStatuses.append(run.status)
            guard run.insertedEventCount == Int64(types[t].inserted) else {
                throw fail("inserted_event_count \(run.insertedEventCount) is not the \(types[t].inserted) appeared and representation_changed events of its type")
            }
            guard run.deletedEventCount == Int64(types[t].deleted) else {
                throw fail("deleted_event_count \(run.deletedEventCount) is not the \(types[t].deleted) disappeared and deleted_object events of its type")
            }
            if run.status == .unauthorized && types[t].inserted + types[t].deleted > 0 {
                throw fail("an unauthorized run read nothing, but its type has events")
            }
        case .source, .sourceRevision, .device, .metadata, .relationship:
            break
        }
    }

    /// At the trailer: every type with events had its run, and the observation's
    /// status is the one its runs imply.
    func finish(line: Int) throws(BundleError) {
        if let t = types.first(where: { $0.run == nil && $0.inserted + $0.deleted > 0 }) {
            throw BundleError(.inconsistent, line: line, "line \(line): events of \(Self.printable(t.name)) but no type_run of it")
        }
        if let status = observationStatus, Self.derived.contains(status) {
            let implied = ObservationStatus.implied(by: runStatuses)
            guard implied == status else {
                throw BundleError(.inconsistent, line: line, "line \(line): the observation's status is \(status.rawValue) but its type runs make it \(implied.rawValue)")
            }
        }
    }

    /// The observation statuses its type runs decide; `failed` and `interrupted` also
    /// end a capture abandoned, reverted or stopped whatever its runs did.
    static let derived: Set<ObservationStatus> = [.completed, .needsReview, .partialUnauthorized, .partialFailed]

    /// The position in `types` of the type named `name`.
    private mutating func find(_ name: ItemText) -> Int? {
        if last >= 0, name.equals(types[last].name) { return last }
        guard let t = index[Array(name.utf8)] else { return nil }
        last = t
        return t
    }

    private static func printable(_ name: [UInt8]) -> String { BundleItemSchema.printable(String(decoding: name, as: UTF8.self)) }
}
