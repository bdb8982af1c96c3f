import HealthProbeCanonical

/// `RESTORE_REQUEST` (protocol version 2): the bundle at `sequence` of a chain the
/// device owns (Protocol/README.md section 8).
public struct RestoreRequest: Sendable, Equatable {
    public var deviceChainHash: String
    public var sequence: Int

    public init(_ frame: SyncFrame) throws {
        let f = try PayloadFields(frame, name: "RESTORE_REQUEST", members: ["device_chain_hash", "sequence"])
        deviceChainHash = try f.hex("device_chain_hash", count: 64)
        sequence = Int(try f.int("sequence", in: SyncLimits.sequences))
    }
}

/// `RESTORE_BUNDLE` (protocol version 2): the stored bundle about to follow in
/// `RESTORE_PART` frames, as `BUNDLE_BEGIN` declares one, and the chain-state digest
/// of the server's replica after it (Protocol/README.md section 8.1), which the client's
/// archive must equal once the bundle is applied.
public struct RestoreBundle: Sendable, Equatable {
    public var sequence: Int
    public var manifestHash: String
    public var parts: Int
    public var itemCount: Int
    public var uncompressedSize: Int
    public var chainStateDigest: String
    public var visibleCount: Int

    /// The members it shares with `BUNDLE_BEGIN` (and `RESTORE_STREAM`).
    public var begin: BundleBegin {
        BundleBegin(sequence: sequence, manifestHash: manifestHash, parts: parts, itemCount: itemCount, uncompressedSize: uncompressedSize)
    }

    public init(_ frame: SyncFrame) throws {
        let f = try PayloadFields(frame, name: "RESTORE_BUNDLE", members: [
            "chain_state_digest", "item_count", "manifest_hash", "parts", "sequence", "uncompressed_size", "visible_count"])
        sequence = Int(try f.int("sequence", in: SyncLimits.sequences))
        manifestHash = try f.hex("manifest_hash", count: 64)
        parts = Int(try f.int("parts", in: SyncLimits.parts))
        itemCount = Int(try f.int("item_count", in: SyncLimits.items))
        uncompressedSize = Int(try f.int("uncompressed_size", in: SyncLimits.uncompressedSize))
        chainStateDigest = try f.hex("chain_state_digest", count: 64)
        visibleCount = Int(try f.int("visible_count", in: SyncLimits.counts))
    }

    /// The frame a server sends.
    public static func frame(sequence: Int, manifestHash: String, parts: Int, itemCount: Int, uncompressedSize: Int,
                             chainStateDigest: String, visibleCount: Int) throws -> SyncFrame {
        try .json(.restoreBundle, .object([
            "sequence": .int(sequence), "manifest_hash": .string(manifestHash), "parts": .int(parts), "item_count": .int(itemCount),
            "uncompressed_size": .int(uncompressedSize), "chain_state_digest": .string(chainStateDigest), "visible_count": .int(visibleCount)]))
    }
}

/// `RESTORE_STATE` (protocol version 3): the chain-state digest of the server's replica after
/// the bundle whose parts it follows, and the visible records it covers (Protocol/README.md
/// section 8.4), which the client's archive must equal once the bundle is applied.
public struct RestoreState: Sendable, Equatable {
    public var sequence: Int
    public var chainStateDigest: String
    public var visibleCount: Int

    public init(_ frame: SyncFrame) throws {
        let f = try PayloadFields(frame, name: "RESTORE_STATE", members: ["chain_state_digest", "sequence", "visible_count"])
        sequence = Int(try f.int("sequence", in: SyncLimits.sequences))
        chainStateDigest = try f.hex("chain_state_digest", count: 64)
        visibleCount = Int(try f.int("visible_count", in: SyncLimits.counts))
    }

    /// The frame a server sends.
    public static func frame(sequence: Int, chainStateDigest: String, visibleCount: Int) throws -> SyncFrame {
        try .json(.restoreState, .object(["sequence": .int(sequence), "chain_state_digest": .string(chainStateDigest), "visible_count": .int(visibleCount)]))
    }
}
