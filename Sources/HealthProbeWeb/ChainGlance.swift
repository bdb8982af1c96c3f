import Foundation
import HealthProbeCanonical

/// One state per chain for a glance at the overview: loss found, needs attention, or up
/// to date; with the reason and what to do, and the alerts linked to their evidence.
enum ChainGlance {
    /// `card` with its glance, its relative last sync, and links on its loss alerts.
    static func apply(_ card: Dashboard.ChainCard, now: Double) -> Dashboard.ChainCard {
        var c = card
        let evidence = card.latestObservationID.map { "/chains/\(card.chain)/observations/\($0)#disappeared" }
        c.alerts = card.alerts.map { a in
            var a = a
            if a.kind == .loss || a.kind == .disappeared { a.link = evidence }
            return a
        }
        c.lastSyncAgo = card.lastSyncAt.flatMap(CanonicalDate.parse).map { ago(now - $0) }
        c.clockInWords = card.clockOffsetSeconds.map(clock)
        if let loss = c.alerts.first(where: { $0.kind == .loss }) {
            c.glance = .init(state: "loss_found", label: "loss found", reason: loss.message,
                             fix: "open the records that disappeared and check them on the device", link: evidence)
        } else if card.deviceState.needsAction {
            c.glance = .init(state: "needs_attention", label: "needs attention", reason: card.deviceState.reason, fix: card.deviceState.fix, link: nil)
        } else if let a = c.alerts.first(where: { [.refusedBundles, .verificationProblem, .clockSkew].contains($0.kind) }) {
            let fix: String = switch a.kind {
            case .verificationProblem: "an admin reads the verification's problems on the admin page and runs verify again"
            case .clockSkew: "set the device's clock to set itself automatically"
            default: "see the device's state on its page"
            }
            c.glance = .init(state: "needs_attention", label: "needs attention", reason: a.message, fix: fix, link: "/chains/\(card.chain)")
        } else {
            c.glance = .init(state: "up_to_date", label: "up to date", reason: nil, fix: nil, link: nil)
        }
        return c
    }

    /// A device clock's offset from the server's (device minus server) in words.
    static func clock(_ offset: Double) -> String {
        let a = abs(offset)
        if a < 1 { return "in step with the server" }
        let side = offset > 0 ? "ahead of" : "behind"
        if a < 120 { return "\(Int(a.rounded())) s \(side) the server" }
        if a < 7200 { return "\(Int((a / 60).rounded())) minutes \(side) the server" }
        return "\(Int((a / 3600).rounded())) hours \(side) the server"
    }

    /// A duration back from now in words: "just now", "5 minutes ago", "3 hours ago", "2 days ago".
    static func ago(_ elapsed: Double) -> String {
        let s = max(elapsed, 0)
        func unit(_ n: Int, _ word: String) -> String { "\(n) \(word)\(n == 1 ? "" : "s") ago" }
        if s < 60 { return "just now" }
        if s < 3600 { return unit(Int(s / 60), "minute") }
        if s < 86_400 { return unit(Int(s / 3600), "hour") }
        return unit(Int(s / 86_400), "day")
    }
}
