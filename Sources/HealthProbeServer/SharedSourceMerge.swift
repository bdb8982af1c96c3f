import Foundation
import GRDB
import HealthProbeArchive
import HealthProbeProtocol

/// The household's possibly shared sources in one pass over each chain, not one join per
/// pair of chains: per type, every chain's visible strict fingerprints are read in the
/// order of the type-and-fingerprint index (a page at a time), merged, and each
/// fingerprint visible in several chains counts once for every pair of them. Work grows
/// with the records of the chains shown, not with the square of their number; memory is
/// a page per chain.
extension HouseholdSummary {
    /// Per pair of `chains` (in their order) and type: visible records of one whose strict
    /// fingerprint is visible in the other. The same answer as `identical` for every pair.
    /// `page`: fingerprints read per chain at a time.
    public static func overlaps(_ store: ServerStore, chains: [String], type: String?, page: Int = 20_000) throws -> [SharedSources] {
        guard chains.count >= 2 else { return [] }
        // The types each chain holds (its own type ids), among those asked for.
        var typeIDs: [[String: Int64]] = []
        for chain in chains {
            typeIDs.append(try store.readReplica(chain) { db in try SharedSourceQueries.typeIDs(db, type: type) })
        }
        var counts: [Int: [Int: [String: Int]]] = [:]
        let types = Set(typeIDs.flatMap(\.keys)).sorted()
        for t in types {
            let holders = chains.indices.filter { typeIDs[$0][t] != nil }
            guard holders.count >= 2 else { continue }
            var streams = try holders.map { i in try FingerprintStream(store: store, chain: chains[i], typeID: typeIDs[i][t]!, pageSize: page) }
            while true {
                // The smallest fingerprint at the head of any stream, and every stream that holds it.
                var smallest: [UInt8]?
                for s in streams.indices { if let f = try streams[s].head(), smallest.map({ f.lexicographicallyPrecedes($0) }) ?? true { smallest = f } }
                guard let f = smallest else { break }
                var holding: [Int] = []
                for s in streams.indices where try streams[s].head() == f {
                    holding.append(holders[s])
                    streams[s].advance()
                }
                guard holding.count >= 2 else { continue }
                for a in holding.indices { for b in holding.indices where b > a { counts[holding[a], default: [:]][holding[b], default: [:]][t, default: 0] += 1 } }
            }
        }
        var out: [SharedSources] = []
        for i in chains.indices {
            for j in chains.indices where j > i {
                for (t, n) in (counts[i]?[j] ?? [:]).sorted(by: { $0.key < $1.key }) {
                    out.append(SharedSources(chains: [chains[i], chains[j]], typeIdentifier: t, identicalStrictFingerprints: n))
                }
            }
        }
        return out
    }
}

/// One chain's visible strict fingerprints of one type, in index order, read a page at a
/// time on one read-only connection held for the merge (not one opened per page).
struct FingerprintStream {
    let connection: DatabaseQueue
    let typeID: Int64
    let pageSize: Int
    private var page: [[UInt8]] = []
    private var position = 0
    private var lastPrefix: [UInt8]?
    private var exhausted = false

    init(store: ServerStore, chain: String, typeID: Int64, pageSize: Int) throws {
        connection = try ServerStore.readOnlyConnection(store.replicaPath(chain))
        self.typeID = typeID
        self.pageSize = max(1, pageSize)
    }

    /// The current fingerprint (reading the next page when needed), nil at the end.
    mutating func head() throws -> [UInt8]? {
        if position < page.count { return page[position] }
        guard !exhausted else { return nil }
        let (typeID, after, limit) = (self.typeID, lastPrefix, pageSize)
        page = try connection.read { db in
            try SharedSourceQueries.visibleFingerprints(db, typeID: typeID, after: after, limit: limit)
        }
        position = 0
        if page.count < pageSize { exhausted = true }
        if let last = page.last { lastPrefix = Array(last.prefix(16)) }
        return page.first
    }

    mutating func advance() { position += 1 }
}
