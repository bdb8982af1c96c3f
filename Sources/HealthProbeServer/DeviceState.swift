import Foundation

/// One state per chain's device, with its reason and what to do: the overview, the API
/// and (later) alerts read it from the same facts.
public struct DeviceState: Sendable, Codable, Equatable {
    public enum Kind: String, Sendable, Codable {
        /// The last sync succeeded recently.
        case syncing
        /// No good sync for longer than `silentAfter`.
        case silent
        /// The server refused the device's last attempt (and nothing good came after).
        case refused
        /// The device's credential was revoked.
        case revoked
        /// The chain has never synced successfully.
        case never
    }

    public var state: Kind
    /// Since when (Unix seconds): the last good sync, the refusal, the revocation.
    public var since: Double?
    /// Why, in words (no values, no hex).
    public var reason: String
    /// What to do about it (empty when nothing is needed).
    public var fix: String
    /// The refusal's protocol code, for `refused`.
    public var refusalCode: String?

    /// A device with no good sync for three days is silent (until it learns each chain's cadence).
    public static let silentAfter: Double = 3 * 24 * 3600

    public static func of(_ f: ChainContact.Facts, now: Double) -> DeviceState {
        if let revoked = f.deviceRevokedAt {
            return DeviceState(state: .revoked, since: revoked, reason: "this device's access was revoked; it can no longer sync",
                               fix: "if the device should sync again, an admin issues a token for it under a new name", refusalCode: nil)
        }
        if let refused = f.lastRefusedAt, refused >= (f.lastSync ?? -.infinity) {
            let code = f.lastRefusalCode ?? "refused"
            return DeviceState(state: .refused, since: refused, reason: Self.refusalReason(code), fix: Self.refusalFix(code), refusalCode: code)
        }
        guard let last = f.lastSync else {
            return DeviceState(state: .never, since: nil, reason: "this chain has not synced successfully yet",
                               fix: "run `hp-node sync` on the device", refusalCode: nil)
        }
        if now - last > silentAfter {
            return DeviceState(state: .silent, since: last, reason: "no successful sync for more than 3 days",
                               fix: "check that the device is on, enrolled and can reach the server, then run `hp-node sync` on it", refusalCode: nil)
        }
        return DeviceState(state: .syncing, since: last, reason: "the last sync succeeded", fix: "", refusalCode: nil)
    }

    static func refusalReason(_ code: String) -> String {
        switch code {
        case "divergence": return "the device's history differs from what it sent before (for example after a reset or reinstall); the server keeps the old history and refuses the new"
        case "out_of_order": return "the device sent a bundle out of order"
        case "bundle_invalid": return "the device sent a bundle that does not verify; nothing of it was stored"
        default: return "the server refused the device's last sync (\(code))"
        }
    }

    static func refusalFix(_ code: String) -> String {
        switch code {
        case "divergence": return "nothing of the old history is lost on the server; an admin compares the chains (`hp-server chains`) before the device syncs as a new chain (`hp-node reset` without --keep-chain)"
        case "bundle_invalid": return "update HealthProbe on the device and sync again; if it repeats, an admin reads `hp-server verify`"
        default: return "sync again; if it repeats, an admin reads `hp-server verify`"
        }
    }
}
