import Foundation
import HealthProbeCanonical

/// The kinds of bundle item, declared in the order items come in a bundle
/// (Protocol/bundles.md, item order): the one list the builder, the item schema,
/// the verifier's rules and the applier each switch over, so a kind added here
/// is a compile error in every place that does not handle it yet.
public enum BundleItemKind: String, CaseIterable, Sendable, Comparable {
    case observation
    case sampleType = "sample_type"
    case source
    case sourceRevision = "source_revision"
    case device
    case metadata
    /// Format 2: a sample first seen with its first version, its `appeared` event and its opened range, as one item.
    case newSample = "new_sample"
    case sample
    case version
    case event
    case rangeOpen = "range_open"
    case rangeClose = "range_close"
    case relationship
    case typeRun = "type_run"

    /// The kind's position in item order (0 for the observation).
    public var order: Int {
        switch self {
        case .observation: 0
        case .sampleType: 1
        case .source: 2
        case .sourceRevision: 3
        case .device: 4
        case .metadata: 5
        case .newSample: 6
        case .sample: 7
        case .version: 8
        case .event: 9
        case .rangeOpen: 10
        case .rangeClose: 11
        case .relationship: 12
        case .typeRun: 13
        }
    }

    public static func < (a: Self, b: Self) -> Bool { a.order < b.order }

    /// The kind named by `bytes[range]`, compared byte for byte with each kind's
    /// name (no string is built); nil for any other text.
    public init?(_ bytes: [UInt8], _ range: Range<Int>) {
        guard !range.isEmpty, range.lowerBound >= 0, range.upperBound <= bytes.count,
              let found = Self.item(named: bytes[range]) else { return nil }
        self = found
    }

    /// The kind of the item parsed as `o` (its `kind` member, a plain string); nil for any other.
    public init?(_ o: FlatJSON) {
        guard let k = o.find("kind"), let r = o.plainRange(k) else { return nil }
        self.init(o.bytes, r)
    }
}

extension BundleItemKind: ItemName { static let itemNames = makeItemNames() }
