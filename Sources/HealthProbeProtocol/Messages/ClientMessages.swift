import HealthProbeCanonical

/// `AUTH`: a device's credential (Protocol/README.md section 7).
public struct AuthRequest: Sendable, Equatable {
    public var deviceName: String
    public var credential: String
    public var clientTime: Double

    public init(_ frame: SyncFrame) throws {
        let f = try PayloadFields(frame, name: "AUTH", members: ["client_time", "credential", "device_name"])
        deviceName = try f.string("device_name", maxLength: 128)
        credential = try f.hex("credential", count: 64)
        clientTime = try f.date("client_time")
    }
}

/// `ENROLL`: a one-time enrollment secret (Protocol/README.md section 7).
public struct EnrollRequest: Sendable, Equatable {
    public var deviceName: String
    public var enrollmentSecret: String
    public var clientTime: Double

    public init(_ frame: SyncFrame) throws {
        let f = try PayloadFields(frame, name: "ENROLL", members: ["client_time", "device_name", "enrollment_secret"])
        deviceName = try f.string("device_name", maxLength: 128)
        enrollmentSecret = try f.string("enrollment_secret", maxLength: 256)
        clientTime = try f.date("client_time")
    }
}

/// `CHAIN_STATUS_REQUEST`.
public struct ChainStatusRequest: Sendable, Equatable {
    public var deviceChainHash: String

    public init(_ frame: SyncFrame) throws {
        let f = try PayloadFields(frame, name: "CHAIN_STATUS_REQUEST", members: ["device_chain_hash"])
        deviceChainHash = try f.hex("device_chain_hash", count: 64)
    }
}

/// `HOUSEHOLD_REQUEST`: an optional type and date window.
public struct HouseholdRequest: Sendable, Equatable {
    public var type: String?
    public var from: Double?
    public var to: Double?

    public init(_ frame: SyncFrame) throws {
        let f = try PayloadFields(frame, name: "HOUSEHOLD_REQUEST", members: ["from", "to", "type"])
        type = try f.optionalString("type", maxLength: 256)
        from = try f.optionalDate("from")
        to = try f.optionalDate("to")
        if let from, let to, from > to { throw f.fail("from", "is after to") }
    }
}

/// `BUNDLE_BEGIN`: what the bundle about to be sent declares; the same members close a
/// streamed bundle (`BUNDLE_STREAM_END`, version 3), declaring what was sent.
public struct BundleBegin: Sendable, Equatable {
    public var sequence: Int
    public var manifestHash: String
    public var parts: Int
    public var itemCount: Int
    public var uncompressedSize: Int

    public init(sequence: Int, manifestHash: String, parts: Int, itemCount: Int, uncompressedSize: Int) {
        (self.sequence, self.manifestHash, self.parts, self.itemCount, self.uncompressedSize) = (sequence, manifestHash, parts, itemCount, uncompressedSize)
    }

    /// The payload's members (`RESTORE_BUNDLE` adds two).
    static let members: Set<String> = ["item_count", "manifest_hash", "parts", "sequence", "uncompressed_size"]

    /// The members as a payload object.
    var payload: [String: JSONValue] {
        ["sequence": .int(sequence), "manifest_hash": .string(manifestHash), "parts": .int(parts),
         "item_count": .int(itemCount), "uncompressed_size": .int(uncompressedSize)]
    }

    /// These members as a frame of `kind`: `BUNDLE_BEGIN`, `BUNDLE_STREAM_END` or `RESTORE_STREAM`.
    public func frame(_ kind: SyncFrame.Kind) throws -> SyncFrame {
        try .json(kind, .object(payload))
    }

    /// Decodes a `BUNDLE_BEGIN`, a `BUNDLE_STREAM_END` or a `RESTORE_STREAM` (errors name the frame's kind).
    public init(_ frame: SyncFrame) throws {
        try self.init(try PayloadFields(frame, name: frame.kind.name, members: Self.members))
    }

    /// Its members read from a payload that holds them (and, for `RESTORE_BUNDLE`, more).
    init(_ f: PayloadFields) throws {
        sequence = Int(try f.int("sequence", in: SyncLimits.sequences))
        manifestHash = try f.hex("manifest_hash", count: 64)
        parts = Int(try f.int("parts", in: SyncLimits.parts))
        itemCount = Int(try f.int("item_count", in: SyncLimits.items))
        uncompressedSize = Int(try f.int("uncompressed_size", in: SyncLimits.uncompressedSize))
    }
}

/// `BUNDLE_STREAM_BEGIN` (version 3): a bundle whose parts follow as they are built; what
/// `BUNDLE_BEGIN` declares comes at its end (`BUNDLE_STREAM_END`).
public struct BundleStreamBegin: Sendable, Equatable {
    public var sequence: Int

    public init(_ frame: SyncFrame) throws {
        let f = try PayloadFields(frame, name: "BUNDLE_STREAM_BEGIN", members: ["sequence"])
        sequence = Int(try f.int("sequence", in: SyncLimits.sequences))
    }
}

/// `BUNDLE_END`: closes the bundle `BUNDLE_BEGIN` opened.
public struct BundleEnd: Sendable, Equatable {
    public var sequence: Int
    public var manifestHash: String

    public init(_ frame: SyncFrame) throws {
        let f = try PayloadFields(frame, name: "BUNDLE_END", members: ["manifest_hash", "sequence"])
        sequence = Int(try f.int("sequence", in: SyncLimits.sequences))
        manifestHash = try f.hex("manifest_hash", count: 64)
    }
}
