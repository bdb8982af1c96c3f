import Foundation
import GRDB

/// One row of `bundle_log`: a bundle a node sent (and the server acknowledged) or
/// a replica received. Every query on the table outside its writers
/// (`BundleApplier`, `ArchiveVerifier`) is a named request here.
public struct BundleLogRecord: Codable, Sendable, FetchableRecord, PersistableRecord {
    public static let databaseTableName = "bundle_log"

    public var deviceChainID: Int64
    public var sequence: Int
    public var observationID: Int64
    public var manifestHash: String
    public var previousManifestHash: String?
    public var itemCount: Int
    public var direction: String
    public var recordedAt: Double
    public var acknowledgedAt: Double?

    public enum CodingKeys: String, CodingKey, ColumnExpression {
        case deviceChainID = "device_chain_id", sequence, observationID = "observation_id", manifestHash = "manifest_hash"
        case previousManifestHash = "previous_manifest_hash", itemCount = "item_count", direction
        case recordedAt = "recorded_at", acknowledgedAt = "acknowledged_at"
    }
    /// The table's columns.
    public typealias Columns = CodingKeys

    /// `direction` of a bundle a replica received.
    public static let received = "received"
    /// `direction` of a bundle a node sent.
    public static let sent = "sent"
}

extension DerivableRequest where RowDecoder == BundleLogRecord {
    /// The bundles a replica received.
    public func received() -> Self { filter(BundleLogRecord.Columns.direction == BundleLogRecord.received) }
}

/// The log's named queries (the SQL each used before it had a home, unchanged).
extension BundleLogRecord {
    /// The last received bundle's sequence and manifest hash, `nil` when none.
    public static func lastReceived(_ db: Database) throws -> (sequence: Int, manifestHash: String)? {
        guard let row = try Row.fetchOne(db, sql: "SELECT sequence, manifest_hash FROM bundle_log WHERE direction = 'received' ORDER BY sequence DESC LIMIT 1") else { return nil }
        return (row["sequence"], row["manifest_hash"])
    }

    /// The received bundles' count, highest sequence and last receipt time.
    public static func receivedSummary(_ db: Database) throws -> (count: Int, lastSequence: Int?, lastRecordedAt: Double?) {
        let r = try Row.fetchOne(db, sql: "SELECT count(*) AS n, max(sequence) AS s, max(recorded_at) AS t FROM bundle_log WHERE direction = 'received'")
        return (r?["n"] ?? 0, r?["s"], r?["t"])
    }

    /// When the last bundle was received, `nil` when none.
    public static func lastReceivedAt(_ db: Database) throws -> Double? {
        try Double.fetchOne(db, sql: "SELECT max(recorded_at) FROM bundle_log WHERE direction = 'received'")
    }

    /// The received bundles' links in sequence order: sequence, manifest hash, previous manifest hash.
    public static func receivedLinks(_ db: Database) throws -> [(sequence: Int, manifestHash: String, previous: String?)] {
        try Row.fetchAll(db, sql: "SELECT sequence, manifest_hash, previous_manifest_hash FROM bundle_log WHERE direction = 'received' ORDER BY sequence")
            .map { ($0[0] as Int, $0[1] as String, $0[2] as String?) }
    }

    /// Whether the bundle at `sequence` was received.
    public static func isReceived(_ db: Database, sequence: Int) throws -> Bool {
        try Bool.fetchOne(db, sql: "SELECT 1 FROM bundle_log WHERE direction = 'received' AND sequence = ?", arguments: [sequence]) ?? false
    }

    /// The observation the received bundle at `sequence` made, `nil` when none.
    public static func receivedObservation(_ db: Database, sequence: Int) throws -> Int64? {
        try Int64.fetchOne(db, sql: "SELECT observation_id FROM bundle_log WHERE direction = 'received' AND sequence = ?", arguments: [sequence])
    }

    /// The highest sequence of `chain` logged as sent, `nil` when none.
    public static func lastSentSequence(_ db: Database, chain: Int64) throws -> Int? {
        try Int.fetchOne(db, sql: "SELECT max(sequence) FROM bundle_log WHERE device_chain_id = ? AND direction = 'sent'", arguments: [chain])
    }

    /// The highest received sequence, `nil` when none.
    public static func lastReceivedSequence(_ db: Database) throws -> Int? {
        try Int.fetchOne(db, sql: "SELECT max(sequence) FROM bundle_log WHERE direction = 'received'")
    }

    /// The manifest hashes a node logged as sent for `chain`, by sequence, up to `sequence`.
    public static func sentManifestHashes(_ db: Database, chain: Int64, upTo sequence: Int) throws -> [Int: String] {
        try Row.fetchAll(db, sql: "SELECT sequence, manifest_hash FROM bundle_log WHERE device_chain_id = ? AND direction = 'sent' AND sequence <= ? ORDER BY sequence",
                         arguments: [chain, sequence]).reduce(into: [Int: String]()) { $0[$1["sequence"]] = $1["manifest_hash"] }
    }

    /// Logs a bundle the server acknowledged (again: updates its acknowledgement time).
    public static func recordSent(_ db: Database, chain: Int64, sequence: Int, observation: Int64, manifestHash: String, previous: String?,
                                  items: Int, now: Double) throws {
        try db.execute(sql: """
            INSERT INTO bundle_log(device_chain_id, sequence, observation_id, manifest_hash, previous_manifest_hash, item_count, direction, recorded_at, acknowledged_at)
            VALUES (?, ?, ?, ?, ?, ?, 'sent', ?, ?)
            ON CONFLICT(device_chain_id, direction, sequence) DO UPDATE SET acknowledged_at = excluded.acknowledged_at
            """, arguments: [chain, sequence, observation, manifestHash, previous, items, now, now])
    }
}
