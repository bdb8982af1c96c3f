import Foundation
import NIOCore

/// The `HOUSEHOLD` reply (Protocol/README.md): every chain side by side from its
/// own replica's aggregates. Chains are never merged; household totals are sums
/// of chains, and records with identical strict fingerprints in two chains are
/// only reported as possibly shared sources. The server builds it
/// (`HealthProbeServer`); nodes decode it.
public enum HouseholdSummary {
    public struct Chain: Sendable, Codable, Equatable {
        public var chain: String
        /// The enrolled device that owns the chain (nil for a chain received before enrollment existed).
        public var deviceName: String?
        /// Device clock minus server clock at the last sync, seconds.
        public var clockOffsetSeconds: Double?
        public var lastObservationID: Int64?
        public var lastObservedAt: Double?
        public var lastSyncAt: Double?
        /// Visible records per type at the chain's latest observation.
        public var visible: [String: Int]
        /// Daily rows of `--type` in the window, per local day start.
        public var daily: [Daily]

        public init(chain: String, deviceName: String? = nil, clockOffsetSeconds: Double? = nil, lastObservationID: Int64?,
                    lastObservedAt: Double?, lastSyncAt: Double?, visible: [String: Int], daily: [Daily]) {
            self.chain = chain
            self.deviceName = deviceName
            self.clockOffsetSeconds = clockOffsetSeconds
            self.lastObservationID = lastObservationID
            self.lastObservedAt = lastObservedAt
            self.lastSyncAt = lastSyncAt
            self.visible = visible
            self.daily = daily
        }
    }

    /// One day's aggregate of one type in one chain.
    public struct Daily: Sendable, Codable, Equatable {
        public var typeIdentifier: String
        public var bucketStart: Double
        public var bucketEnd: Double
        public var visibleRecordCount: Int
        public var valueSum: Double?
        public var valueMax: Double?
        public var sourceRevision: String?
        public var aggregateHash: String?

        public init(typeIdentifier: String, bucketStart: Double, bucketEnd: Double, visibleRecordCount: Int, valueSum: Double?,
                    valueMax: Double?, sourceRevision: String?, aggregateHash: String?) {
            self.typeIdentifier = typeIdentifier
            self.bucketStart = bucketStart
            self.bucketEnd = bucketEnd
            self.visibleRecordCount = visibleRecordCount
            self.valueSum = valueSum
            self.valueMax = valueMax
            self.sourceRevision = sourceRevision
            self.aggregateHash = aggregateHash
        }
    }

    public struct SharedSources: Sendable, Codable, Equatable {
        public var chains: [String]
        public var typeIdentifier: String
        /// Visible records of one chain with the same strict fingerprint as a visible record of the other.
        public var identicalStrictFingerprints: Int

        public init(chains: [String], typeIdentifier: String, identicalStrictFingerprints: Int) {
            self.chains = chains
            self.typeIdentifier = typeIdentifier
            self.identicalStrictFingerprints = identicalStrictFingerprints
        }
    }

    public struct Report: Sendable, Codable, Equatable {
        public var chains: [Chain]
        /// Sums of the chains' visible counts per type (labelled as such; never de-duplicated).
        public var householdSumOfChains: [String: Int]
        public var possiblySharedSources: [SharedSources]

        public init(chains: [Chain], householdSumOfChains: [String: Int], possiblySharedSources: [SharedSources]) {
            self.chains = chains
            self.householdSumOfChains = householdSumOfChains
            self.possiblySharedSources = possiblySharedSources
        }
    }

    /// The report as the `HOUSEHOLD` frame carries it: JSON with the field names
    /// of `Report` as they are (camelCase), keys sorted (Protocol/README.md).
    public static func wireJSON(_ report: Report) throws -> [UInt8] {
        let e = JSONEncoder()
        e.outputFormatting = [.sortedKeys]
        return Array(try e.encode(report))
    }

    /// Decodes `wireJSON` with every member checked (`Report(wire:)`, Messages/HouseholdReply.swift).
    public static func fromWire(_ bytes: some Sequence<UInt8>) throws -> Report {
        try Report(wire: SyncFrame(kind: .household, payload: ByteBuffer(bytes: bytes)))
    }

}
