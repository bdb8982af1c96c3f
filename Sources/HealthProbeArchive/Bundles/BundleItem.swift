import Foundation
import HealthProbeCanonical

/// One item of an observation bundle with its typed payload (Protocol/bundles.md
/// section 4): the one model the builder writes (`write(to:)`), the verifier decodes
/// (`decode(_:kind:line:)`, after `BundleItemSchema` checked its members), the
/// verifier's rules check (`BundleRules`) and the applier stores. Hashes are
/// `Digest32`s, dates Unix seconds, closed sets their enums; text stays the UTF-8
/// it arrived as (`ItemText`): a decoded item builds no `String`, unless a text has escapes.
public indirect enum BundleItem: Sendable {
    case observation(Observation)
    case sampleType(SampleType)
    case source(Source)
    case sourceRevision(SourceRevision)
    case device(Device)
    case metadata(Metadata)
    case newSample(NewSample)
    case sample(Sample)
    case version(Version)
    case event(Event)
    case rangeOpen(RangeOpen)
    case rangeClose(RangeClose)
    case relationship(Relationship)
    case typeRun(TypeRun)

    /// The item's kind (its `kind` member).
    public var kind: BundleItemKind {
        switch self {
        case .observation: .observation
        case .sampleType: .sampleType
        case .source: .source
        case .sourceRevision: .sourceRevision
        case .device: .device
        case .metadata: .metadata
        case .newSample: .newSample
        case .sample: .sample
        case .version: .version
        case .event: .event
        case .rangeOpen: .rangeOpen
        case .rangeClose: .rangeClose
        case .relationship: .relationship
        case .typeRun: .typeRun
        }
    }

    public struct Observation: Sendable, Equatable {
        public var appVersion: ItemText?
        public var endedAt: Double?
        public var notes: ItemText?
        public var observedAt: Double
        public var osVersion: ItemText?
        public var schemaVersion: Int64
        public var selectedTypeSetHash: Digest32?
        public var startedAt: Double?
        public var status: ObservationStatus
        public var timeZoneIdentifier: ItemText?
        public var timeZoneSecondsFromGMT: Int64?
        public var triggerReason: TriggerReason
    }

    public struct SampleType: Sendable, Equatable {
        public var category: ValueKind?
        public var displayName: ItemText?
        public var typeIdentifier: ItemText
    }

    /// A source, named by its name's hash and bundle identifier (in a `source` item, and inside a `source_revision`).
    public struct Source: Sendable, Equatable {
        public var bundleIdentifier: ItemText?
        public var sourceNameHash: Digest32?
    }

    public struct SourceRevision: Sendable, Equatable {
        public var operatingSystemVersion: ItemText?
        public var productType: ItemText?
        public var source: Source
        public var version: ItemText?
    }

    public struct Device: Sendable, Equatable {
        public var deviceHash: Digest32
        public var firmwareVersion: ItemText?
        public var hardwareVersion: ItemText?
        public var localIdentifierHash: Digest32?
        public var manufacturerHash: Digest32?
        public var model: ItemText?
        public var softwareVersion: ItemText?
        public var udiHash: Digest32?
    }

    public struct Metadata: Sendable, Equatable {
        public var metadataHash: Digest32
        /// The metadata's canonical JSON object, as text.
        public var metadataJSON: ItemText
    }

    public struct Sample: Sendable, Equatable {
        public var firstSeenAt: Double
        public var fuzzyKey: ItemText?
        public var sampleUUIDHash: Digest32?
        public var semanticFingerprint: Digest32?
        public var strictFingerprint: Digest32
        public var typeIdentifier: ItemText
    }

    /// A sample first seen in this observation together with what it brought (bundle
    /// format 2): the `sample` item (type `payload.type`, first seen at the observation's
    /// `observed_at`), its `version`, its `appeared` event (evidence `reported`) and the range
    /// it opened, each with the payload's hash. That hash is no member: it is computed.
    public struct NewSample: Sendable, Equatable {
        public var fuzzyKey: ItemText?
        public var payload: Payload
        /// The hash of the payload's canonical bytes (computed when decoded, read when built).
        public var payloadHash: Digest32
        public var sampleUUIDHash: Digest32?
        public var semanticFingerprint: Digest32?
        public var strictFingerprint: Digest32

        /// How the other items name the sample.
        public var sample: SampleReference { SampleReference(strictFingerprint: strictFingerprint, type: payload.type) }
    }

    /// How an item names a sample: its type and strict fingerprint.
    public struct SampleReference: Sendable, Equatable {
        public var strictFingerprint: Digest32
        public var type: ItemText
    }

    public struct Version: Sendable, Equatable {
        public var payload: Payload
        /// The hash of the payload's canonical bytes (checked when decoded).
        public var payloadHash: Digest32
        public var sample: SampleReference
    }

    /// A version's payload (Protocol/bundles.md section 4.1): what its payload hash covers.
    public struct Payload: Sendable, Equatable {
        public var categoryValue: Int64?
        public var creationDate: Double?
        public var deviceHash: Digest32?
        public var durationSeconds: Double?
        public var endDate: Double
        public var metadataHash: Digest32?
        public var numericValue: Double?
        public var source: PayloadSource?
        public var sourceRevision: PayloadRevision?
        public var startDate: Double
        public var type: ItemText
        public var unit: ItemText?
        public var valueKind: ValueKind
        public var workoutActivityType: Int64?
    }

    /// A payload's source (its members named as the payload names them).
    public struct PayloadSource: Sendable, Equatable {
        public var bundleIdentifier: ItemText?
        public var nameHash: Digest32?
    }

    public struct PayloadRevision: Sendable, Equatable {
        public var operatingSystemVersion: ItemText?
        public var productType: ItemText?
        public var version: ItemText?
    }

    public struct Event: Sendable, Equatable {
        public var eventKind: EventKind
        public var evidenceKind: EvidenceKind
        public var observedAt: Double
        public var payloadHash: Digest32?
        public var sample: SampleReference
    }

    public struct RangeOpen: Sendable, Equatable {
        public var firstSeenAt: Double
        public var payloadHash: Digest32?
        public var sample: SampleReference
    }

    public struct RangeClose: Sendable, Equatable {
        /// The sequence of the bundle whose observation opened the range.
        public var firstSequence: Int64
        public var lastSeenAt: Double
        public var payloadHash: Digest32?
        public var sample: SampleReference
    }

    public struct Relationship: Sendable, Equatable {
        public var metadataHash: Digest32?
        public var relationshipKind: RelationshipKind
        public var source: SampleReference
        public var target: SampleReference
    }

    public struct TypeRun: Sendable, Equatable {
        /// Anchors as their standard base64 text (what the manifest hashes).
        public var anchorAfter: ItemText?
        public var anchorBefore: ItemText?
        public var deletedEventCount: Int64
        public var endedAt: Double?
        public var errorKind: TypeRunErrorKind?
        public var errorMessageHash: Digest32?
        public var insertedEventCount: Int64
        public var rejectedRecordCount: Int64
        public var runKind: TypeRunKind
        public var startedAt: Double?
        public var status: TypeRunStatus
        public var typeIdentifier: ItemText
        public var verifiedVisibleCount: Int64?
    }
}

/// Text of a bundle item as its UTF-8 bytes: a slice of the line it was decoded
/// from (no copy; a text with escapes is decoded into bytes of its own), or the bytes
/// a builder read from the archive.
public struct ItemText: Sendable, Hashable {
    public let utf8: ArraySlice<UInt8>

    public init(utf8: ArraySlice<UInt8>) { self.utf8 = utf8 }
    public init(utf8: [UInt8]) { self.utf8 = utf8[...] }
    public init(_ string: String) { utf8 = Array(string.utf8)[...] }

    /// The text (built on each call).
    public var string: String { String(decoding: utf8, as: UTF8.self) }

    /// Whether the text is `bytes`, byte for byte.
    func equals(_ bytes: [UInt8]) -> Bool { bytes.withUnsafeBufferPointer { equals($0) } }

    /// Whether the text is `bytes`, byte for byte (compared with `memcmp`).
    func equals(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        guard utf8.count == bytes.count else { return false }
        return bytes.isEmpty || utf8.withUnsafeBufferPointer { memcmp($0.baseAddress!, bytes.baseAddress!, bytes.count) == 0 }
    }
}
