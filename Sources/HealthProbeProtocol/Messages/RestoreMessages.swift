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
    /// The members it shares with `BUNDLE_BEGIN` (and `RESTORE_STREAM`).
    public var begin: BundleBegin
    public var chainStateDigest: String
    public var visibleCount: Int

    public init(_ frame: SyncFrame) throws {
        let f = try PayloadFields(frame, name: "RESTORE_BUNDLE", members: BundleBegin.members.union(["chain_state_digest", "visible_count"]))
        begin = try BundleBegin(f)
        chainStateDigest = try f.hex("chain_state_digest", count: 64)
        visibleCount = Int(try f.int("visible_count", in: SyncLimits.counts))
    }

    /// The frame a server sends: `begin`'s members and the chain state after the bundle.
    public static func frame(_ begin: BundleBegin, chainStateDigest: String, visibleCount: Int) throws -> SyncFrame {
        try .json(.restoreBundle, .object(begin.payload.merging(["chain_state_digest": .string(chainStateDigest), "visible_count": .int(visibleCount)]) { a, _ in a }))
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
