import Foundation
import HealthProbeProtocol
import Synchronization

/// The household's shared-records counts per type, as last counted, with the chains'
/// sequences they were counted at, and which types are being counted now. A page shows
/// the last count (saying when it is older than the latest sync) rather than wait for a
/// merge over every chain, and never starts a second count of a type already being counted.
final class OverlapAnswers: Sendable {
    struct Answer: Sendable {
        /// Each chain and its last received bundle when counted (`DashboardQueries.overlapKey`).
        let key: String
        /// When it was counted (Unix seconds).
        let countedAt: Double
        let pairs: [HouseholdSummary.SharedSources]
    }

    private struct State {
        var answers: [String: Answer] = [:]
        var counting: Set<String> = []
        var warmerRunning = false
    }
    private let state = Mutex(State())

    func answer(_ type: String) -> Answer? { state.withLock { $0.answers[type] } }

    /// Whether `OverlapWarmer` runs (then a count older than the latest sync is shown while
    /// the warmer counts again; without it, a page counts again itself).
    var warmerRunning: Bool {
        get { state.withLock { $0.warmerRunning } }
    }
    func setWarmerRunning(_ running: Bool) { state.withLock { $0.warmerRunning = running } }

    /// Marks `type` as being counted; false when it already is (the caller leaves it).
    func startCounting(_ type: String) -> Bool { state.withLock { $0.counting.insert(type).inserted } }

    /// Ends a count: its answer is kept (when one was made) and the type is free again.
    func finishCounting(_ type: String, _ answer: Answer?) {
        state.withLock { s in
            if let answer { s.answers[type] = answer }
            s.counting.remove(type)
        }
    }
}
