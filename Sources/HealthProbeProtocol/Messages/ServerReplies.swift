import HealthProbeCanonical

/// `AUTH_OK`: the device the connection is authenticated as, the server's time, and
/// the credential when it answers `ENROLL` (Protocol/README.md section 7).
public struct AuthOK: Sendable, Equatable {
    public var deviceName: String
    public var serverTime: Double
    /// Present only in the reply to `ENROLL`.
    public var credential: String?

    public init(_ frame: SyncFrame) throws {
        let f = try PayloadFields(frame, name: "AUTH_OK", members: ["credential", "device_name", "server_time"], optional: ["credential"])
        deviceName = try f.string("device_name", maxLength: SyncLimits.maxDeviceNameBytes)
        serverTime = try f.date("server_time")
        // Absent, never null: the reply to AUTH has no such member.
        credential = f.has("credential") ? try f.hex("credential", count: 64) : nil
    }
}

/// `CHAIN_STATUS`: the last bundle the server holds of a chain (0 and null: none).
public struct ChainStatus: Sendable, Equatable {
    public var deviceChainHash: String
    public var lastSequence: Int
    public var lastManifestHash: String?

    public init(_ frame: SyncFrame) throws {
        let f = try PayloadFields(frame, name: "CHAIN_STATUS", members: ["device_chain_hash", "last_manifest_hash", "last_sequence"])
        deviceChainHash = try f.hex("device_chain_hash", count: 64)
        lastSequence = Int(try f.int("last_sequence", in: SyncLimits.chainPositions))
        lastManifestHash = try f.optionalHex("last_manifest_hash", count: 64)
        if (lastSequence == 0) != (lastManifestHash == nil) {
            throw f.fail("last_manifest_hash", lastSequence == 0 ? "must be null when last_sequence is 0" : "must be 64 lower-case hex digits when last_sequence is above 0")
        }
    }
}

/// `BUNDLE_ACK`: the server applied (or already held) the bundle it names.
public struct BundleAck: Sendable, Equatable {
    public enum Status: String, Sendable, CaseIterable {
        case applied
        case alreadyApplied = "already_applied"
    }
    public var sequence: Int
    public var manifestHash: String
    public var status: Status

    public init(_ frame: SyncFrame) throws {
        let f = try PayloadFields(frame, name: "BUNDLE_ACK", members: ["manifest_hash", "sequence", "status"])
        sequence = Int(try f.int("sequence", in: SyncLimits.sequences))
        manifestHash = try f.hex("manifest_hash", count: 64)
        status = Status(rawValue: try f.oneOf("status", Status.allCases.map(\.rawValue)))!
    }
}

/// `ERROR`: a known code, and the message made safe to show (at most
/// `SyncLimits.maxShownMessage` characters, control and format characters as `?`).
public struct ErrorReply: Sendable, Equatable {
    public var code: SyncProtocolError.Code
    public var message: String
    public var retryable: Bool
    /// The bundle the error is about, if any.
    public var sequence: Int?

    public init(_ frame: SyncFrame) throws {
        let f = try PayloadFields(frame, name: "ERROR", members: ["code", "message", "retryable", "sequence"])
        let text = try f.string("code", maxLength: 64)
        guard let code = SyncProtocolError.Code(rawValue: text) else { throw f.fail("code", "\(PayloadFields.printable(text)) is not a code of Protocol/README.md section 5") }
        self.code = code
        message = ShownText.clean(try f.string("message", maxLength: SyncFrame.maxLength), maxCharacters: SyncLimits.maxShownMessage)
        retryable = try f.bool("retryable")
        sequence = try f.optionalInt("sequence", in: SyncLimits.sequences).map { Int($0) }
    }

    /// The error as the client reports it.
    public var error: SyncProtocolError { SyncProtocolError(code, "server: \(message)") }
}
