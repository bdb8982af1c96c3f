import Foundation
import GRDB
import HealthProbeCanonical

/// One sample as visible at an observation.
public struct VisibleSample: Sendable, Codable, Equatable {
    public var sampleID: Int64
    public var versionID: Int64
    public var typeIdentifier: String
    public var strictFingerprint: String
    public var payloadHash: String
    public var startDate: Double
    public var endDate: Double
    public var valueKind: String?
    public var numericValue: Double?
    public var unit: String?
    public var categoryValue: Int64?
    /// The observation whose range made this version visible.
    public var visibleSince: Int64
}

/// What a point-in-time view shows: one observation, optionally one type and
/// a start-date window `[from, to)`.
public struct SnapshotScope: Sendable, Equatable {
    public var observationID: Int64
    public var typeIdentifier: String?
    public var from: Double?
    public var to: Double?
    public init(observationID: Int64, typeIdentifier: String? = nil, from: Double? = nil, to: Double? = nil) {
        self.observationID = observationID
        self.typeIdentifier = typeIdentifier
        self.from = from
        self.to = to
    }
}

/// Point-in-time reconstruction from visibility ranges (database-design.md 8).
///
/// Rows come ordered by type, then strict fingerprint, whose first 16 hex
/// digits are the sample's start time: a keyset cursor `(type, fingerprint)`
/// seeks straight into the `samples(sample_type_id, 16-byte prefix)` index
/// (unique prefixes, so its order is the fingerprints'), so a deep page costs
/// what the first one does.
public enum PointInTime {
    /// Where the next page starts: the last row's type and fingerprint.
    public struct Cursor: Sendable, Equatable, Codable {
        public var typeID: Int64
        public var fingerprint: String
        /// `"<type id>:<fingerprint>"`, for command lines.
        public var token: String { "\(typeID):\(fingerprint)" }
        public init(typeID: Int64, fingerprint: String) { self.typeID = typeID; self.fingerprint = fingerprint }
        /// Nil unless `token` is a type id (1 to 18 ASCII digits, no leading zero), `:` and
        /// 64 lower-case hex digits: exactly what `token` writes (docs/openapi.json says the same).
        public init?(token: String) {
            let parts = token.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
            guard parts.count == 2, (1...18).contains(parts[0].utf8.count), parts[0].utf8.first != UInt8(ascii: "0"),
                  parts[0].utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }),
                  let t = Int64(parts[0]), ArchiveHasher.isLowerHex(parts[1].utf8) else { return nil }
            typeID = t
            fingerprint = String(parts[1])
        }
    }

    /// One page: the rows and the cursor of the next page (nil at the end).
    public struct Page: Sendable {
        public var rows: [VisibleSample]
        public var next: Cursor?
    }

    static let selectSQL = """
        SELECT s.id, v.id, s.strict_fingerprint, v.payload_hash, v.start_date, v.end_date, v.value_kind, v.numeric_value, v.unit,
               v.category_value, r.first_observation_id
        FROM samples s
        JOIN sample_visibility_ranges r ON r.sample_id = s.id AND r.first_observation_id <= ?1
             AND (r.last_observation_id IS NULL OR r.last_observation_id > ?1)
        JOIN sample_versions v ON v.id = r.version_id
        WHERE s.sample_type_id = ?2 AND \(fingerprintBetween)
          AND (?5 IS NULL OR v.start_date >= ?5) AND (?6 IS NULL OR v.start_date < ?6)
        ORDER BY \(SampleIndexes.fingerprintPrefix("s.strict_fingerprint"))
        """

    /// `?3 < s.strict_fingerprint < ?4`, with the prefix bounds it implies (a blob above
    /// another has a prefix at least as large) so that SQLite seeks the index range.
    static let fingerprintBetween = """
        \(prefix("s.strict_fingerprint")) >= \(prefix("?3")) AND \(prefix("s.strict_fingerprint")) <= \(prefix("?4"))
          AND s.strict_fingerprint > ?3 AND s.strict_fingerprint < ?4
        """
    private static func prefix(_ column: String) -> String { SampleIndexes.fingerprintPrefix(column) }

    /// The archive's id of type `identifier`, nil when it never held a sample of it.
    static func typeID(_ db: Database, _ identifier: String) throws -> Int64? {
        try Int64.fetchOne(db, sql: "SELECT id FROM sample_types WHERE type_identifier = ?", arguments: [identifier])
    }

    /// The types in scope, by id, with their identifiers.
    static func types(_ db: Database, _ scope: SnapshotScope) throws -> [(Int64, String)] {
        guard try ObservationQueries.exists(db, id: scope.observationID) else {
            throw ArchiveError(.notFound, "no observation \(scope.observationID); list them with `hp-node observations`")
        }
        if let t = scope.typeIdentifier {
            guard let id = try typeID(db, t) else {
                throw ArchiveError(.notFound, "the archive has no samples of type \(t)")
            }
            return [(id, t)]
        }
        return try Row.fetchAll(db, sql: "SELECT id, type_identifier FROM sample_types ORDER BY id").map { ($0[0], $0[1]) }
    }

    /// Fingerprint bounds for the window, as stored bytes: samples whose identity time
    /// lies in it. A day of slack on each side keeps samples whose start date moved in
    /// a later version. Without a window, x'00' is below and 33 bytes of 0xFF above
    /// every 32-byte fingerprint.
    static func bounds(_ scope: SnapshotScope) -> ([UInt8], [UInt8]) {
        let lo = scope.from.map { SampleEncoding.timePrefixBytes($0 - 86_400) } ?? [0]
        let hi = scope.to.map { SampleEncoding.timePrefixBytes($0 + 86_400) } ?? [UInt8](repeating: 0xFF, count: 33)
        return (lo, hi)
    }

    /// Visits visible rows in order from `after`, until `body` returns false.
    static func scan(_ db: Database, _ scope: SnapshotScope, after: Cursor?, _ body: (Int64, VisibleSample) throws -> Bool) throws {
        let stmt = try FastStatement(db, selectSQL)
        let (lo, hi) = bounds(scope)
        for (typeID, identifier) in try types(db, scope) {
            if let after, typeID < after.typeID { continue }
            var start = lo
            if let after, after.typeID == typeID, let fp = StoredHash.bytes(after.fingerprint), lo.lexicographicallyPrecedes(fp) { start = fp }
            var more = true
            try stmt.queryWhile(db, [.int(scope.observationID), .int(typeID), .blob(start), .blob(hi), .double(scope.from), .double(scope.to)], { r in
                let row = VisibleSample(sampleID: r.int(0)!, versionID: r.int(1)!, typeIdentifier: identifier, strictFingerprint: r.hash(2) ?? "",
                                        payloadHash: r.hash(3) ?? "", startDate: r.double(4)!, endDate: r.double(5)!, valueKind: r.text(6),
                                        numericValue: r.double(7), unit: r.text(8), categoryValue: r.int(9), visibleSince: r.int(10)!)
                more = try body(typeID, row)
                return more
            })
            if !more { return }
        }
    }

    /// One page of at most `limit` rows after `after`.
    public static func page(_ db: Database, _ scope: SnapshotScope, after: Cursor? = nil, limit: Int = 100) throws -> Page {
        var rows: [VisibleSample] = []
        rows.reserveCapacity(min(limit, 10_000))
        var last: Cursor?
        var hasMore = false
        try scan(db, scope, after: after) { typeID, row in
            if rows.count == limit { hasMore = true; return false }
            rows.append(row)
            last = Cursor(typeID: typeID, fingerprint: row.strictFingerprint)
            return true
        }
        return Page(rows: rows, next: hasMore ? last : nil)
    }

    /// Every visible row in scope, streamed (memory does not grow with the count).
    public static func stream(_ db: Database, _ scope: SnapshotScope, _ body: (VisibleSample) throws -> Void) throws {
        try scan(db, scope, after: nil) { _, row in try body(row); return true }
    }

    /// Number of visible rows in scope, counted in SQLite.
    public static func count(_ db: Database, _ scope: SnapshotScope) throws -> Int {
        let (lo, hi) = bounds(scope)
        var total = 0
        for (typeID, _) in try types(db, scope) {
            total += try Int.fetchOne(db, sql: """
                SELECT count(*) FROM samples s
                JOIN sample_visibility_ranges r ON r.sample_id = s.id AND r.first_observation_id <= ?1
                     AND (r.last_observation_id IS NULL OR r.last_observation_id > ?1)
                JOIN sample_versions v ON v.id = r.version_id
                WHERE s.sample_type_id = ?2 AND \(fingerprintBetween)
                  AND (?5 IS NULL OR v.start_date >= ?5) AND (?6 IS NULL OR v.start_date < ?6)
                """, arguments: [scope.observationID, typeID, Data(lo), Data(hi), scope.from, scope.to]) ?? 0
        }
        return total
    }
}
