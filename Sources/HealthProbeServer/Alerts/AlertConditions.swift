import Foundation

/// Decides which conditions fire on a chain from what the registry knows of it. Pure: the
/// evaluator gathers the facts and the clock's `now`.
public struct AlertConditions: Sendable {
    /// The cadence assumed until a chain's history shows one.
    public var defaultCadence: Double
    /// Added to the cadence before a chain counts as silent.
    public var grace: Double

    public init(defaultCadence: Double = 24 * 3600, grace: Double = 6 * 3600) {
        self.defaultCadence = defaultCadence
        self.grace = grace
    }

    /// How long `chain` may go without a good sync: its override, else its learned cadence, plus grace.
    public func silentAfter(mean: Double?, override: Double?) -> Double {
        (override ?? mean ?? defaultCadence) + grace
    }

    /// The conditions firing on `chain`. Loss fires from its finding until the alert is
    /// acknowledged (a person has looked: the records are gone from the device, nothing resolves it by itself).
    public func findings(chain: String, facts: ChainContact.Facts, verification: DeviceRegistry.Verification?,
                         mean: Double?, override: Double?, loss: AlertLoss.Facts? = nil, now: Double) -> [AlertFinding] {
        var out: [AlertFinding] = []
        if let last = facts.lastSync, facts.deviceRevokedAt == nil {
            let limit = silentAfter(mean: mean, override: override)
            if now - last > limit {
                out.append(AlertFinding(chain: chain, condition: .silent,
                                        detail: "no good sync for \(Self.hours(now - last)) h (expected within \(Self.hours(limit)) h)"))
            }
        }
        if let revoked = facts.deviceRevokedAt, let contact = facts.lastContact, contact > revoked {
            out.append(AlertFinding(chain: chain, condition: .refused, detail: "revoked device \(facts.device ?? "?") still trying"))
        } else if let refused = facts.lastRefusedAt, refused > (facts.lastSync ?? -.infinity) {
            out.append(AlertFinding(chain: chain, condition: .refused, detail: "bundle refused: \(facts.lastRefusalCode ?? "refused")"))
        }
        if let verification, !verification.ok {
            out.append(AlertFinding(chain: chain, condition: .verificationFailed,
                                    detail: "\(verification.mode) verification found \(verification.problems.count) problem\(verification.problems.count == 1 ? "" : "s")"))
        }
        if let loss, loss.foundAt > (loss.acknowledgedAt ?? -.infinity) {
            out.append(AlertFinding(chain: chain, condition: .lossFound, detail: loss.detail, page: loss.page))
        }
        return out
    }

    /// Whole hours, for messages (never traps, whatever the value).
    static func hours(_ seconds: Double) -> String { String(format: "%.0f", seconds / 3600) }
}
