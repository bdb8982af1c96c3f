import Foundation
import HealthProbeCanonical

/// What triggered a capture and the device context at that moment.
public struct ObservationContext: Sendable {
    public var triggerReason: TriggerReason
    public var appVersion: String?
    public var osVersion: String?
    public var timeZoneIdentifier: String?
    public var timeZoneSecondsFromGMT: Int?
    /// The type identifiers this capture was asked to cover.
    public var selectedTypes: [String]
    public var notes: String?

    public init(triggerReason: TriggerReason, appVersion: String? = HealthProbeVersion.current, osVersion: String? = nil,
                timeZoneIdentifier: String? = nil, timeZoneSecondsFromGMT: Int? = nil,
                selectedTypes: [String] = [], notes: String? = nil) {
        self.triggerReason = triggerReason
        self.appVersion = appVersion
        self.osVersion = osVersion
        self.timeZoneIdentifier = timeZoneIdentifier
        self.timeZoneSecondsFromGMT = timeZoneSecondsFromGMT
        self.selectedTypes = selectedTypes
        self.notes = notes
    }

    /// `hp:v2:type_set:` SHA-256 of the sorted, de-duplicated type list as canonical JSON.
    public static func typeSetHash(_ types: [String]) -> String {
        let sorted = Array(Set(types)).sorted(by: CanonicalJSON.keyPrecedes)
        // Strings only: encoding cannot fail.
        return (try? ArchiveHasher.sha256(.typeSet, json: .array(sorted.map(JSONValue.string)))) ?? ""
    }
}

/// The product version carried in observations and exports.
public enum HealthProbeVersion {
    public static let current = "0.1.0"
}

/// A sample type as the archive registers it.
public struct SampleTypeDescriptor: Sendable, Hashable {
    public var identifier: String
    public var displayName: String?
    /// The kind of value its samples hold.
    public var category: ValueKind?
    public init(_ identifier: String, displayName: String? = nil, category: ValueKind? = nil) {
        self.identifier = identifier
        self.displayName = displayName
        self.category = category
    }
}

/// How a type run reads its source.
public enum TypeRunKind: String, Sendable, Codable, CaseIterable {
    /// Only what the source reports added or deleted since the anchor.
    case anchored
    /// Everything visible; what is not seen again disappears once the scan succeeds.
    case fullScan = "full_scan"
}

/// Status of one type run.
public enum TypeRunStatus: String, Sendable, Codable, CaseIterable {
    case running, completed, unauthorized, failed, interrupted
    /// Completed, but some records were rejected: nothing was closed.
    case needsReview = "needs_review"
}

/// Status of an observation.
public enum ObservationStatus: String, Sendable, Codable, CaseIterable {
    case running, completed, failed, interrupted
    case needsReview = "needs_review"
    case partialUnauthorized = "partial_unauthorized"
    case partialFailed = "partial_failed"

    /// The status a capture's type runs imply when it finishes (Protocol/bundles.md
    /// section 4.2); a bundle whose observation says otherwise is refused.
    public static func implied(by runs: [TypeRunStatus]) -> ObservationStatus {
        if runs.isEmpty { return .completed }
        if !runs.contains(where: { $0 == .completed || $0 == .needsReview }) { return .failed }
        if runs.contains(.failed) || runs.contains(.interrupted) { return .partialFailed }
        if runs.contains(.unauthorized) { return .partialUnauthorized }
        if runs.contains(.needsReview) { return .needsReview }
        return .completed
    }
}

/// Event kinds in `sample_observation_events`.
public enum EventKind: String, Sendable, Codable, CaseIterable, StoredCode {
    case appeared
    case disappeared
    case representationChanged = "representation_changed"
    /// Deleted-object evidence for a sample that was not visible (or never seen).
    case deletedObject = "deleted_object"

    /// The stored code (schema 15). Never renumber: archives hold these.
    public var code: Int64 {
        switch self {
        case .appeared: 0
        case .disappeared: 1
        case .representationChanged: 2
        case .deletedObject: 3
        }
    }

    /// The kinds that open, replace or close a visibility range, as an SQL list of codes.
    static let rangeKindsSQL = "(\(appeared.sql), \(representationChanged.sql), \(disappeared.sql))"
}

/// Evidence kinds in `sample_observation_events.evidence_kind`.
public enum EvidenceKind: String, Sendable, Codable, CaseIterable, StoredCode {
    case reported
    case fullScanAbsent = "full_scan_absent"
    case deletedObject = "hk_deleted_object"

    /// The stored code (schema 15). Never renumber: archives hold these.
    public var code: Int64 {
        switch self {
        case .reported: 0
        case .fullScanAbsent: 1
        case .deletedObject: 2
        }
    }
}

/// What started an observation (`observations.trigger_reason`).
public enum TriggerReason: String, Sendable, Codable, CaseIterable {
    /// The person asked for it.
    case manual
    /// A schedule (a background task, a timer).
    case scheduled
    /// The health store reported new data.
    case backgroundDelivery = "background_delivery"
    /// An Apple Health export was imported.
    case `import`
    /// The deterministic simulator.
    case simulator
    /// A benchmark run.
    case benchmark
}

/// Why a type run did not complete (`observation_type_runs.error_kind`).
public enum TypeRunErrorKind: String, Sendable, Codable, CaseIterable {
    /// The person did not grant read access to the type.
    case authorizationDenied = "authorization_denied"
    /// The source's query failed.
    case queryFailed = "query_failed"
    /// The capture ended (crashed, killed) with the run still running.
    case abandoned
    /// The run was rolled back: its observation was reverted.
    case reverted
}

/// Kinds of `sample_relationships.relationship_kind`.
public enum RelationshipKind: String, Sendable, Codable, CaseIterable {
    /// The target is a member of the source correlation (blood pressure, food).
    case correlationMember = "correlation_member"
    /// The target is the route of the source workout.
    case workoutRoute = "workout_route"
}

/// What one page did.
public struct PageResult: Sendable, Equatable {
    public var records = 0
    public var appeared = 0
    public var changed = 0
    public var disappeared = 0
    public var deletedUnknown = 0
    public var unchanged = 0
    /// The page had been committed before (a retry): nothing was written.
    public var alreadyCommitted = false
    /// Samples this page marked seen for the first time in its run.
    var newlySeen = 0
    /// The appeared, disappeared and changed events this page inserted (an event
    /// already recorded at the observation is not counted again).
    var events = Aggregates.ChangeCounts()
    public init() {}

    /// Adds another page's counts to these.
    public mutating func add(_ r: PageResult) {
        records += r.records
        appeared += r.appeared
        changed += r.changed
        disappeared += r.disappeared
        deletedUnknown += r.deletedUnknown
        unchanged += r.unchanged
        newlySeen += r.newlySeen
        events.add(r.events)
    }
}

/// What a finished type run recorded.
public struct TypeRunResult: Sendable, Equatable {
    public var typeIdentifier: String
    public var status: TypeRunStatus
    public var insertedEvents: Int
    public var deletedEvents: Int
    public var visibleCount: Int?
    public var rejectedRecords: Int
}
