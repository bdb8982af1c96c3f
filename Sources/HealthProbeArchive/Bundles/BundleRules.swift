import Foundation
import HealthProbeCanonical

/// The rules between the items of one bundle (Protocol/bundles.md section 4.5),
/// checked from its bytes alone while it streams: what one item says must agree
/// with what the others say. Memory grows with the bundle's sample types, never
/// with its samples.
struct BundleRules {
    /// The header's sequence.
    var sequence = 0
    /// The observation's `observed_at`, as its canonical bytes.
    private var observedAt: [UInt8] = []
    private var observationStatus: ObservationStatus?

    /// A type named by a `sample_type` item: its category, the events of its type
    /// counted so far, and its run's status once its `type_run` was read.
    private struct TypeState {
        var name: [UInt8]
        /// The UTF-8 of its `category` (nil: `null`).
        var category: [UInt8]?
        var inserted = 0
        var deleted = 0
        var run: TypeRunStatus?
    }
    private var types: [TypeState] = []
    private var index: [[UInt8]: Int] = [:]
    /// The type found last: items of one kind mostly name the same type one after another.
    private var last = -1
    private var runStatuses: [TypeRunStatus] = []

    /// Checks item `o` of kind `kind` (its members already checked against the schema).
    mutating func check(_ kind: BundleItemKind, _ o: FlatJSON, line: Int) throws(BundleError) {
        func fail(_ why: String) -> BundleError { BundleError(.inconsistent, line: line, "line \(line): \(kind.rawValue): \(why)") }
        switch kind {
        case .observation:
            if let i = o.find("observed_at"), let r = o.plainRange(i) { observedAt = Array(o.bytes[r]) }
            observationStatus = o.string("status").flatMap(ObservationStatus.init(rawValue:))
        case .sampleType:
            let name = Self.text(o, o.find("type_identifier"))
            if let previous = types.last?.name, !previous.lexicographicallyPrecedes(name) {
                throw BundleError(.order, line: line, "line \(line): sample_type items must be in increasing byte order of type_identifier, each type once")
            }
            index[name] = types.count
            types.append(TypeState(name: name, category: o.find("category").flatMap { o.type($0) == .string ? Self.text(o, $0) : nil }))
        case .sample:
            guard find(o, o.find("type_identifier")) != nil else { throw fail("type_identifier names a type with no sample_type item") }
            guard sameAsObservation(o, "first_seen_at") else { throw fail("first_seen_at differs from the observation's observed_at") }
        case .version:
            guard let t = find(o, o.object("sample").flatMap { o.find("type", in: $0) }) else {
                throw fail("sample.type names a type with no sample_type item")
            }
            if let category = types[t].category {
                let p = o.object("payload") ?? FlatJSON.nowhere
                // Enumeration values have no escapes: compared byte for byte.
                guard let v = o.find("value_kind", in: p), let r = o.plainRange(v), BundleItemSchema.equal(o.bytes, r, category) else {
                    throw fail("payload.value_kind differs from its type's sample_type category \(String(decoding: category, as: UTF8.self))")
                }
            }
        case .event:
            guard let t = find(o, o.object("sample").flatMap { o.find("type", in: $0) }) else {
                throw fail("sample.type names a type with no sample_type item")
            }
            guard sameAsObservation(o, "observed_at") else { throw fail("observed_at differs from the observation's observed_at") }
            guard let k = o.find("event_kind") else { return }
            if o.stringEquals(k, "appeared") || o.stringEquals(k, "representation_changed") { types[t].inserted += 1 } else { types[t].deleted += 1 }
        case .rangeOpen:
            guard sameAsObservation(o, "first_seen_at") else { throw fail("first_seen_at differs from the observation's observed_at") }
        case .rangeClose:
            // Section 4.3: a rule between the item and its header.
            if let first = o.number("first_sequence"), first >= Double(sequence) {
                throw BundleError(.field, line: line, "line \(line): range_close: first_sequence \(Int64(first)) is not lower than the bundle's sequence \(sequence)")
            }
            if let i = o.find("last_seen_at"), let r = o.plainRange(i), !observedAt.isEmpty,
               observedAt.lexicographicallyPrecedes(o.bytes[r]) {
                throw fail("last_seen_at is after the observation's observed_at")
            }
        case .typeRun:
            guard let t = find(o, o.find("type_identifier")) else { throw fail("type_identifier names a type with no sample_type item") }
            guard types[t].run == nil else { throw fail("a second type_run of \(Self.printable(types[t].name))") }
            let status = o.string("status").flatMap(TypeRunStatus.init(rawValue:)) ?? .running
            types[t].run = status
            runStatuses.append(status)
            let inserted = o.number("inserted_event_count") ?? -1, deleted = o.number("deleted_event_count") ?? -1
            guard inserted == Double(types[t].inserted) else {
                throw fail("inserted_event_count \(Int64(inserted)) is not the \(types[t].inserted) appeared and representation_changed events of its type")
            }
            guard deleted == Double(types[t].deleted) else {
                throw fail("deleted_event_count \(Int64(deleted)) is not the \(types[t].deleted) disappeared and deleted_object events of its type")
            }
            if status == .unauthorized && types[t].inserted + types[t].deleted > 0 {
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

    /// Whether date member `key` is the observation's `observed_at`, byte for byte.
    private func sameAsObservation(_ o: FlatJSON, _ key: StaticString) -> Bool {
        guard let i = o.find(key), let r = o.plainRange(i) else { return false }
        return BundleItemSchema.equal(o.bytes, r, observedAt)
    }

    /// The position in `types` of the type named by string member `i`.
    private mutating func find(_ o: FlatJSON, _ i: Int32?) -> Int? {
        guard let i else { return nil }
        if let r = o.plainRange(i) {
            if last >= 0, BundleItemSchema.equal(o.bytes, r, types[last].name) { return last }
            guard let t = index[Array(o.bytes[r])] else { return nil }
            last = t
            return t
        }
        return o.string(at: i).flatMap { index[Array($0.utf8)] }
    }

    /// The UTF-8 of string member `i` (escapes resolved).
    private static func text(_ o: FlatJSON, _ i: Int32?) -> [UInt8] {
        guard let i else { return [] }
        if let r = o.plainRange(i) { return Array(o.bytes[r]) }
        return Array((o.string(at: i) ?? "").utf8)
    }

    private static func printable(_ name: [UInt8]) -> String { BundleItemSchema.printable(String(decoding: name, as: UTF8.self)) }
}
