import Foundation
import GRDB
import HealthProbeArchive
import HealthProbeProtocol

/// Builds the household summary from every chain's own replica.
extension HouseholdSummary {
    /// `only` limits the report to those chains (a reader's readable chains: the overlap
    /// section is computed among them alone); nil reports every chain (the administrator's CLI).
    public static func build(_ store: ServerStore, registry: DeviceRegistry? = nil, only: [String]? = nil, type: String? = nil,
                             from: Double? = nil, to: Double? = nil) throws -> Report {
        var chains: [Chain] = []
        for hash in try only ?? store.chains() {
            let replica = try Archive.open(path: store.replicaPath(hash), mode: .readOnly)
            var c = try replica.writer.read { db -> Chain in
                let last = try Row.fetchOne(db, sql: "SELECT id, observed_at FROM observations ORDER BY id DESC LIMIT 1")
                let sync = try Double.fetchOne(db, sql: "SELECT max(recorded_at) FROM bundle_log WHERE direction = 'received'")
                var visible: [String: Int] = [:]
                var daily: [Daily] = []
                if let id: Int64 = last?["id"] {
                    for s in try AggregateQueries.summaries(db, at: id, typeIdentifier: type) { visible[s.typeIdentifier] = s.visibleRecordCount }
                    if let type { daily = try AggregateQueries.daily(db, at: id, typeIdentifier: type, from: from, to: to).map {
                            Daily(typeIdentifier: $0.typeIdentifier, bucketStart: $0.bucketStart, bucketEnd: $0.bucketEnd, visibleRecordCount: $0.visibleRecordCount,
                                  valueSum: $0.valueSum, valueMax: $0.valueMax, sourceRevision: $0.sourceRevision, aggregateHash: $0.aggregateHash)
                        } }
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
        // One merge over the chains shown, not a join per pair.
        let shared = try overlaps(store, chains: chains.map(\.chain), type: type)
        return Report(chains: chains, householdSumOfChains: totals, possiblySharedSources: shared)
    }

    /// Per type, visible records of chain `a` whose strict fingerprint is also visible in chain `b`.
    public static func identical(_ store: ServerStore, _ a: String, _ b: String, type: String?) throws -> [SharedSources] {
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
                JOIN other.samples os ON os.sample_type_id = ot.id AND \(SampleIndexes.fingerprintMatches("os.strict_fingerprint", "s.strict_fingerprint"))
                JOIN other.sample_visibility_ranges orr ON orr.sample_id = os.id AND orr.last_observation_id IS NULL
                WHERE ? IS NULL OR st.type_identifier = ?
                GROUP BY st.type_identifier ORDER BY st.type_identifier
                """, arguments: [type, type]).map { SharedSources(chains: [a, b], typeIdentifier: $0[0], identicalStrictFingerprints: $0[1]) }
        }
    }
}
