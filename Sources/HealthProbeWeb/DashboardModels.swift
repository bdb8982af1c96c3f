import Foundation
import HealthProbeArchive

/// What the pages and `/api/v1` show: one set of types, so both read the same code path.
/// Dates are canonical text (ISO 8601 UTC with milliseconds); hashes lower-case hex.
public enum Dashboard {
    /// Something on a chain that a person should look at.
    public struct Alert: Codable, Sendable, Equatable {
        public enum Kind: String, Codable, Sendable, CustomStringConvertible {
            public var description: String { rawValue }
            /// Bundles the server refused (nothing of them stored), by reason.
            case refusedBundles = "refused_bundles"
            /// The device clock differs from the server's by more than five minutes.
            case clockSkew = "clock_skew"
            /// Records disappeared at the latest observation (with what the classification made of them).
            case disappeared
            /// The latest observation's classification found loss: records gone with nothing covering their days.
            case loss
            /// The last verification found a problem.
            case verificationProblem = "verification_problem"
            /// The chain was never verified.
            case notVerified = "not_verified"
            /// A device replaced by another (its history taken over) still tried to sync it; nothing was stored.
            case replacedDevice = "replaced_device"
        }
        public var kind: Kind
        public var message: String
        /// Where the evidence is (a loss or disappearance: the observation's records that disappeared).
        public var link: String? = nil
    }

    /// A chain at a glance: one state, the reason, and what to do.
    public struct Glance: Codable, Sendable, Equatable {
        /// `up_to_date`, `needs_attention` or `loss_found`.
        public var state: String
        public var label: String
        public var reason: String?
        public var fix: String?
        public var link: String?
    }

    public struct Verification: Codable, Sendable, Equatable {
        public var checkedAt: String
        public var mode: String
        public var ok: Bool
        public var problems: [String]
    }

    /// The chain's device, in one state (`DeviceState`): syncing, silent, refused, revoked or never synced.
    public struct DeviceStatus: Codable, Sendable, Equatable {
        public var state: String
        /// The state in words: "up to date", "silent since …", "refused since …".
        public var label: String
        /// Whether a person should act (every state but syncing).
        public var needsAction: Bool
        public var since: String?
        public var reason: String
        public var fix: String
        public var refusalCode: String?
    }

    /// One chain on the overview.
    public struct ChainCard: Codable, Sendable, Equatable {
        public var chain: String
        public var chainShort: String
        public var device: String?
        public var person: String?
        /// The last good sync (a refused one never counts).
        public var lastSyncAt: String?
        public var deviceState: DeviceStatus
        public var clockOffsetSeconds: Double?
        public var bundles: Int
        public var visibleRecords: Int
        public var types: Int
        public var latestObservationID: Int64?
        public var latestObservedAt: String?
        public var latestStatus: String?
        public var verification: Verification?
        public var alerts: [Alert]
        /// The chain's one state (set for pages and the API from the facts above).
        public var glance: Glance? = nil
        /// The last good sync relative to now ("3 minutes ago").
        public var lastSyncAgo: String? = nil
        /// The clock offset in words ("in step with the server", "3 minutes ahead of the server").
        public var clockInWords: String? = nil
    }

    /// The chains of one person.
    public struct PersonChains: Codable, Sendable, Equatable {
        public var person: String
        public var chains: [ChainCard]
    }

    public struct Overview: Codable, Sendable, Equatable {
        public var signedInAs: String
        public var role: String
        public var people: [PersonChains]
    }

    /// A type's summary at an observation.
    public struct TypeRow: Codable, Sendable, Equatable {
        public var typeIdentifier: String
        /// The type's friendly name and display unit (`TypeCatalogue`; the identifier when unknown).
        public var typeName: String
        public var unit: String?
        public var visibleRecords: Int
        public var earliestStart: String?
        public var latestEnd: String?
        public var valueSum: Double?
        public var valueMax: Double?
    }

    /// One observation in a chain's timeline.
    public struct TimelineRow: Codable, Sendable, Equatable {
        public var observationID: Int64
        public var observedAt: String
        public var status: String
        public var trigger: String
        public var typeRuns: Int
        public var appeared: Int
        public var disappeared: Int
        public var changed: Int
    }

    public struct ChainPage: Codable, Sendable, Equatable {
        public var card: ChainCard
        public var timeline: [TimelineRow]
        /// `after` for the next page of the timeline, nil at the end.
        public var nextAfter: Int64?
        public var types: [TypeRow]
    }

    /// One type's classified change at an observation (against the previous one).
    public struct TypeChange: Codable, Sendable, Equatable {
        public var typeIdentifier: String
        public var typeName: String
        public var runStatus: String?
        public var appeared: Int
        public var disappeared: Int
        public var changed: Int
        public var visibleAfter: Int?
        /// The one conclusion for the type (`ChangeVerdict`), and why, in words.
        public var verdict: String
        public var reasons: [String]
        /// The labels behind the verdict (details).
        public var labels: [String]
        public var uncertainty: [String]
        public var lostRecords: Int
        public var consolidatedRecords: Int
        public var uncertainRecords: Int
        /// The counts above in words, only those that are not zero.
        public var evidence: String
    }

    public struct ObservationPage: Codable, Sendable, Equatable {
        /// Types whose verdict is loss (the banner names them; it never says "not loss" beside them).
        public var lossTypes: [String]
        /// The same types by their friendly names, in words ("Steps, Heart rate").
        public var lossTypeNames: String
        public var hasLoss: Bool
        public var chain: String
        public var observationID: Int64
        public var observedAt: String
        public var status: String
        public var previousObservationID: Int64?
        public var changes: [TypeChange]
        public var manyTypesShifting: Bool
        /// What the capture re-read, in words (a Health Auto Export push's window); nil for others.
        public var captureWindow: String? = nil
        /// Types whose new records arrived over an hour after their own time: late, not lost.
        public var lateTypes: [LateType] = []
    }

    /// A type whose records arrived late at an observation.
    public struct LateType: Codable, Sendable, Equatable {
        public var typeIdentifier: String
        public var typeName: String
        public var lateSeconds: Double
        /// "up to 11 h after their own time".
        public var words: String
    }

    /// One visible record (a page of what was visible at an observation).
    public struct VisibleRecord: Codable, Sendable, Equatable {
        public var typeIdentifier: String
        public var start: String
        public var end: String
        public var value: String
        public var payloadHash: String
        public var visibleSince: Int64
        public var typeName: String? = nil
        /// The start in the device's local time (`YYYY-MM-DD HH:mm`).
        public var localStart: String? = nil
    }

    public struct VisiblePage: Codable, Sendable, Equatable {
        public var chain: String
        public var observationID: Int64
        public var typeIdentifier: String?
        public var records: [VisibleRecord]
        /// The cursor of the next page, nil at the end.
        public var next: String?
        /// The zone local times are in.
        public var zone: String? = nil
    }

    /// One local day of a type (all source revisions of the chain summed, labelled as such).
    public struct Day: Codable, Sendable, Equatable {
        public var day: String
        public var start: Double
        public var records: Int
        public var valueSum: Double?
        public var valueMax: Double?
        public var sourceRevisions: Int
    }

    /// A type's days in one chain at one observation.
    public struct TypeSeries: Codable, Sendable, Equatable {
        public var chain: String
        public var chainShort: String
        public var device: String?
        public var person: String?
        public var typeIdentifier: String
        public var observationID: Int64?
        public var clockOffsetSeconds: Double?
        public var days: [Day]
        /// For category types (sleep, stand hours): time per state on each local day, a
        /// record counted on the day it ends (a night on its morning). Nil for other types.
        public var stateDays: [StateDay]? = nil
    }

    /// One local day of a category type: the time spent in each state.
    public struct StateDay: Codable, Sendable, Equatable {
        public var day: String
        public var start: Double
        public var records: Int
        public var states: [StateTime]
    }

    /// Time in one state of a category type, named by the catalogue.
    public struct StateTime: Codable, Sendable, Equatable {
        public var value: Int64
        public var name: String
        public var seconds: Double
        /// Whether the state spans others rather than adding to them (sleep's "in bed").
        public var spansOthers: Bool
    }

    /// A type across the chains a person may read: side by side, never merged.
    public struct TypeAcross: Codable, Sendable, Equatable {
        public var typeIdentifier: String
        public var series: [TypeSeries]
        /// Pairs of chains with identical records of this type (possibly one source seen twice).
        public var overlaps: [Overlap]
        /// When `overlaps` were counted (canonical UTC); nil while a first count is under way.
        public var overlapsCountedAt: String?
        /// Whether that count includes the latest bundle of every chain shown (false: counted
        /// before a later sync of one of them, and being counted again).
        public var overlapsCurrent: Bool
        /// Whether the last attempt to count them again failed (the server's log says why).
        public var overlapsCountFailed: Bool
    }

    public struct Overlap: Codable, Sendable, Equatable {
        public var chains: [String]
        public var identicalRecords: Int
    }

    public struct DiffRow: Codable, Sendable, Equatable {
        public var sampleID: Int64
        public var typeIdentifier: String
        /// The type's friendly name (`TypeCatalogue`; the identifier when unknown).
        public var typeName: String
        public var kind: String
        public var before: String?
        public var after: String?
    }

    public struct DiffPage: Codable, Sendable, Equatable {
        public var chain: String
        public var from: Int64
        public var to: Int64
        public var counts: [DiffTypeCount]
        public var rows: [DiffRow]
        /// `after` for the next page, nil at the end.
        public var nextAfter: Int64?
    }
}
