import Foundation
import GRDB
import HealthProbeArchive
import HealthProbeProtocol

/// The household's possibly shared sources in one pass over each chain, not one join per
/// pair of chains: per type, every chain's visible strict fingerprints are read in the
/// order of the type-and-fingerprint index (a page at a time), merged, and each
/// fingerprint is counted once under the set of chains that hold it. Only at the end does
/// each set's count go to the pairs inside it: no step is taken per pair per record. Each
/// fingerprint is compared with every chain's current head (a 32-byte compare, cheap beside
/// reading the record); memory is a page per chain and one count per set.
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
        var out: [SharedSources] = []
        let types = Set(typeIDs.flatMap(\.keys)).sorted()
        var pairs: [Int: [String: Int]] = [:]  // i * chains.count + j (i < j) -> type -> records
        for t in types {
            let holders = chains.indices.filter { typeIDs[$0][t] != nil }
            guard holders.count >= 2 else { continue }
            var streams = try holders.map { i in try FingerprintStream(store: store, chain: chains[i], typeID: typeIDs[i][t]!, pageSize: page) }
            // Fingerprints per set of holding streams (a bit per stream, `words` words a set).
            let words = (streams.count + 63) / 64
            var bySet: [[UInt64]: Int] = [:]
            var set = [UInt64](repeating: 0, count: words)
            var smallest = [UInt8](repeating: 0, count: 32)
            while true {
                // The smallest fingerprint at the head of any stream.
                var found = false
                for s in streams.indices {
                    guard try streams[s].fill() else { continue }
                    if !found || streams[s].head(lessThan: smallest) { streams[s].copyHead(to: &smallest); found = true }
                }
                guard found else { break }
                // Every stream that holds it, each moved past it.
                var holding = 0
                for w in set.indices { set[w] = 0 }
                for s in streams.indices where streams[s].headEquals(smallest) {
                    HolderSets.insert(s, into: &set)
                    holding += 1
                    streams[s].advance()
                }
                if holding >= 2 { bySet[set, default: 0] += 1 }
            }
            for (pair, n) in HolderSets.pairs(bySet, holders: holders) {
                pairs[pair.a * chains.count + pair.b, default: [:]][t, default: 0] += n
            }
        }
        for i in chains.indices {
            for j in chains.indices where j > i {
                for (t, n) in (pairs[i * chains.count + j] ?? [:]).sorted(by: { $0.key < $1.key }) {
                    out.append(SharedSources(chains: [chains[i], chains[j]], typeIdentifier: t, identicalStrictFingerprints: n))
                }
            }
        }
        return out
    }
}

/// Sets of streams as bits (`words` 64-bit words a set: stream s is bit s % 64 of word s / 64),
/// and the pairs inside counted sets.
enum HolderSets {
    static func insert(_ stream: Int, into set: inout [UInt64]) { set[stream / 64] |= 1 << UInt64(stream % 64) }

    static func contains(_ set: [UInt64], _ stream: Int) -> Bool { stream / 64 < set.count && set[stream / 64] & (1 << UInt64(stream % 64)) != 0 }

    struct Pair: Hashable { let a: Int, b: Int }

    /// For each set and its count, every pair (a < b, as `holders[stream]`) of streams in it
    /// gets the count; a pair in several sets gets the sum.
    static func pairs(_ bySet: [[UInt64]: Int], holders: [Int]) -> [Pair: Int] {
        var out: [Pair: Int] = [:]
        for (members, n) in bySet {
            let inSet = holders.indices.filter { contains(members, $0) }.map { holders[$0] }
            for a in inSet.indices { for b in inSet.indices where b > a { out[Pair(a: inSet[a], b: inSet[b]), default: 0] += n } }
        }
        return out
    }
}

/// One chain's visible strict fingerprints of one type, in index order, read a page at a
/// time into one flat buffer (32 bytes each) on one read-only connection held for the merge.
struct FingerprintStream {
    let connection: DatabaseQueue
    let typeID: Int64
    let pageSize: Int
    private var page: [UInt8] = []
    private var count = 0
    private var position = 0
    private var exhausted = false

    init(store: ServerStore, chain: String, typeID: Int64, pageSize: Int) throws {
        connection = try ServerStore.readOnlyConnection(store.replicaPath(chain))
        self.typeID = typeID
        self.pageSize = max(1, pageSize)
    }

    /// Whether there is a current fingerprint (reading the next page when needed).
    mutating func fill() throws -> Bool {
        if position < count { return true }
        guard !exhausted else { return false }
        let after: [UInt8]? = count > 0 ? Array(page[(count - 1) * 32 ..< (count - 1) * 32 + 16]) : nil
        let (typeID, limit) = (self.typeID, pageSize)
        // The page's buffer is reused: moved out (not shared), emptied, filled, moved back.
        var next: [UInt8] = []
        swap(&next, &page)
        next.removeAll(keepingCapacity: true)
        count = try connection.read { db in
            try SharedSourceQueries.visibleFingerprints(db, typeID: typeID, after: after, limit: limit, into: &next)
        }
        page = next
        position = 0
        if count < pageSize { exhausted = true }
        return count > 0
    }

    /// Whether the current fingerprint sorts before `other` (32 bytes). Call after `fill`.
    func head(lessThan other: [UInt8]) -> Bool { compareHead(other) < 0 }

    /// Whether the current fingerprint is `other`; false at the end.
    func headEquals(_ other: [UInt8]) -> Bool { position < count && compareHead(other) == 0 }

    func copyHead(to target: inout [UInt8]) {
        let start = position * 32
        for k in 0..<32 { target[k] = page[start + k] }
    }

    private func compareHead(_ other: [UInt8]) -> Int32 {
        page.withUnsafeBufferPointer { p in other.withUnsafeBufferPointer { o in memcmp(p.baseAddress! + position * 32, o.baseAddress!, 32) } }
    }

    mutating func advance() { position += 1 }
}
