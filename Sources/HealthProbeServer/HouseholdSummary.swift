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
            let state = try replica.latestState(typeIdentifier: type, from: from, to: to)
            var visible: [String: Int] = [:]
            for s in state.summaries { visible[s.typeIdentifier] = s.visibleRecordCount }
            let daily = state.daily.map {
                Daily(typeIdentifier: $0.typeIdentifier, bucketStart: $0.bucketStart, bucketEnd: $0.bucketEnd, visibleRecordCount: $0.visibleRecordCount,
                      valueSum: $0.valueSum, valueMax: $0.valueMax, sourceRevision: $0.sourceRevision, aggregateHash: $0.aggregateHash)
            }
            var c = Chain(chain: hash, lastObservationID: state.lastObservationID, lastObservedAt: state.lastObservedAt, lastSyncAt: state.lastSyncAt,
                          visible: visible, daily: daily)
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
            try SharedSourceQueries.identical(db, otherPath: store.replicaPath(b), type: type)
                .map { SharedSources(chains: [a, b], typeIdentifier: $0.typeIdentifier, identicalStrictFingerprints: $0.count) }
        }
    }
}
