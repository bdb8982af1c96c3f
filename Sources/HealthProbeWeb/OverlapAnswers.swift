import Foundation
import HealthProbeProtocol
import Synchronization

/// The household's shared-records counts per type, as last counted, with the chains'
/// sequences they were counted at, which types are being counted now, and which failed
/// their last count. A page shows the last count (saying when it is older than the latest
/// sync of a chain it shows) rather than wait for a merge over every chain, and a type is
/// never counted twice at once.
final class OverlapAnswers: Sendable {
    struct Answer: Sendable {
        /// The chains and their last received bundles when counted (`DashboardQueries.OverlapKey`).
        let key: String
        let sequences: [String: Int]
        /// When it was counted (Unix seconds).
        let countedAt: Double
        let pairs: [HouseholdSummary.SharedSources]
    }

    /// What `startCounting` found.
    enum Start: Sendable {
        /// A count for this very key is kept: nothing to do.
        case current(Answer)
        /// Another count of the type is under way.
        case underWay
        /// The caller counts, and then calls `finishCounting`.
        case start
    }

    private struct State {
        var answers: [String: Answer] = [:]
        var counting: Set<String> = []
        var failed: Set<String> = []
        var warmerRunning = false
    }
    private let state = Mutex(State())

    func answer(_ type: String) -> Answer? { state.withLock { $0.answers[type] } }

    /// Whether the last count of `type` failed (the page then says so beside the older count).
    func lastCountFailed(_ type: String) -> Bool { state.withLock { $0.failed.contains(type) } }

    /// Whether `OverlapWarmer` runs (then pages show the last count and never count themselves).
    var warmerRunning: Bool { state.withLock { $0.warmerRunning } }
    func setWarmerRunning(_ running: Bool) { state.withLock { $0.warmerRunning = running } }

    /// Marks `type` as being counted for `key`, unless a count for that key is kept or one is
    /// under way: one look under the lock, so two callers never both start.
    func startCounting(_ type: String, key: String) -> Start {
        state.withLock { s in
            if let a = s.answers[type], a.key == key { return .current(a) }
            return s.counting.insert(type).inserted ? .start : .underWay
        }
    }

    /// Ends a count: its answer is kept when one was made (and a failure mark cleared); the
    /// type is free again either way.
    func finishCounting(_ type: String, _ answer: Answer?) {
        state.withLock { s in
            if let answer { s.answers[type] = answer; s.failed.remove(type) }
            s.counting.remove(type)
        }
    }

    /// Marks the last count of `type` as failed (the warmer logs why).
    func countFailed(_ type: String) { _ = state.withLock { $0.failed.insert(type) } }
}
