import Foundation
import GRDB
import HealthProbeArchive

/// Cross-chain summaries: every chain side by side from its own replica's
/// aggregates. Chains are never merged; household totals are sums of chains,
/// and records with identical strict fingerprints in two chains are only
/// reported as possibly shared sources.
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
        public var daily: [DailyAggregate]
    }

    public struct SharedSources: Sendable, Codable, Equatable {
        public var chains: [String]
        public var typeIdentifier: String
        /// Visible records of one chain with the same strict fingerprint as a visible record of the other.
        public var identicalStrictFingerprints: Int
    }

    public struct Report: Sendable, Codable, Equatable {
        public var chains: [Chain]
        /// Sums of the chains' visible counts per type (labelled as such; never de-duplicated).
        public var householdSumOfChains: [String: Int]
        public var possiblySharedSources: [SharedSources]
    }

    public static func build(_ store: ServerStore, registry: DeviceRegistry? = nil, type: String? = nil, from: Double? = nil, to: Double? = nil) throws -> Report {
        var chains: [Chain] = []
        for hash in try store.chains() {
            let replica = try Archive.open(path: store.replicaPath(hash), mode: .readOnly)
            var c = try replica.writer.read { db -> Chain in
                let last = try Row.fetchOne(db, sql: "SELECT id, observed_at FROM observations ORDER BY id DESC LIMIT 1")
                let sync = try Double.fetchOne(db, sql: "SELECT max(recorded_at) FROM bundle_log WHERE direction = 'received'")
                var visible: [String: Int] = [:]
                var daily: [DailyAggregate] = []
                if let id: Int64 = last?["id"] {
                    for s in try AggregateQueries.summaries(db, at: id, typeIdentifier: type) { visible[s.typeIdentifier] = s.visibleRecordCount }
                    if let type { daily = try AggregateQueries.daily(db, at: id, typeIdentifier: type, from: from, to: to) }
                }
                return Chain(chain: hash, lastObservationID: last?["id"], lastObservedAt: last?["observed_at"], lastSyncAt: sync, visible: visible, daily: daily)
            }
            if let info = try registry?.chainInfo(hash) {
                c.deviceName = info.device
                c.clockOffsetSeconds = info.clockOffset
                if let s = info.lastSync { c.lastSyncAt = max(c.lastSyncAt ?? s, s) }
            }
            chains.append(c)
        }
        var totals: [String: Int] = [:]
        for c in chains { for (t, n) in c.visible { totals[t, default: 0] += n } }
        var shared: [SharedSources] = []
        let hashes = chains.map(\.chain)
        for i in hashes.indices {
            for j in hashes.indices where j > i {
                shared += try identical(store, hashes[i], hashes[j], type: type)
            }
        }
        return Report(chains: chains, householdSumOfChains: totals, possiblySharedSources: shared)
    }

    /// The report as the `HOUSEHOLD` frame carries it: JSON with the field names
    /// of `Report` as they are (camelCase), keys sorted (Protocol/README.md).
    public static func wireJSON(_ report: Report) throws -> [UInt8] {
        let e = JSONEncoder()
        e.outputFormatting = [.sortedKeys]
        return Array(try e.encode(report))
    }

    /// Decodes `wireJSON`.
    public static func fromWire(_ bytes: some Sequence<UInt8>) throws -> Report {
        try JSONDecoder().decode(Report.self, from: Data(bytes))
    }

    /// Per type, visible records of chain `a` whose strict fingerprint is also visible in chain `b`.
    static func identical(_ store: ServerStore, _ a: String, _ b: String, type: String?) throws -> [SharedSources] {
        // The ATTACHed replica shares the connection's busy timeout: other readers and the
        // server's writer use both files.
        return try ServerStore.readOnlyConnection(store.replicaPath(a)).inDatabase { db in
            try db.execute(sql: "ATTACH DATABASE ? AS other", arguments: [store.replicaPath(b)])
            defer { try? db.execute(sql: "DETACH DATABASE other") }
            return try Row.fetchAll(db, sql: """
                SELECT st.type_identifier, count(*) AS n
                FROM main.samples s
                JOIN main.sample_types st ON st.id = s.sample_type_id
                JOIN main.sample_visibility_ranges r ON r.sample_id = s.id AND r.last_observation_id IS NULL
                JOIN other.sample_types ot ON ot.type_identifier = st.type_identifier
                JOIN other.samples os ON os.sample_type_id = ot.id AND os.strict_fingerprint = s.strict_fingerprint
                JOIN other.sample_visibility_ranges orr ON orr.sample_id = os.id AND orr.last_observation_id IS NULL
                WHERE ? IS NULL OR st.type_identifier = ?
                GROUP BY st.type_identifier ORDER BY st.type_identifier
                """, arguments: [type, type]).map { SharedSources(chains: [a, b], typeIdentifier: $0[0], identicalStrictFingerprints: $0[1]) }
        }
    }
}
