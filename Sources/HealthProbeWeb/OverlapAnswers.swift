import Foundation
import HealthProbeProtocol
import Synchronization

/// The household's shared-records counts per type, as last counted, with the chains'
/// sequences they were counted at, which types are being counted now, and which failed
/// their last count. A page shows the last count (saying when it is older than the latest
/// sync of a chain it shows) rather than wait for a merge over every chain, and a type is
/// never counted twice at once. With a `file` (the data directory's disposable `cache/`),
/// the counts outlive a restart: the page shows them at once, and the warmer counts again
/// only the types whose chains have synced since (a count over 12 chains of 1,000,000
/// records took about a minute of a core).
final class OverlapAnswers: Sendable {
    struct Answer: Sendable, Codable, Equatable {
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
    /// Where the counts are kept between runs (nil: in memory only).
    let file: String?
    private let saving = Mutex(())

    init(file: String? = nil) {
        self.file = file
        if let file, let kept = Self.load(file) { state.withLock { $0.answers = kept } }
    }

    /// The counts kept in `file`; nil when it is missing or not one this server wrote (it is
    /// a cache: the warmer counts again).
    static func load(_ file: String) -> [String: Answer]? {
        guard let data = FileManager.default.contents(atPath: file),
              let kept = try? JSONDecoder().decode([String: Answer].self, from: data) else { return nil }
        let sane = kept.allSatisfy { type, a in
            a.pairs.allSatisfy { $0.typeIdentifier == type && $0.identicalStrictFingerprints >= 0 && $0.chains.count == 2 }
                && a.sequences.values.allSatisfy { $0 >= 0 } && a.countedAt.isFinite
        }
        return sane ? kept : nil
    }

    /// Writes the counts to `file` (a new file renamed over the old one); a failure only
    /// costs a count after the next restart.
    private func save() {
        guard let file else { return }
        // One save at a time, each of the counts as they are then: the last rename holds the latest.
        saving.withLock { _ in
            guard let data = try? JSONEncoder().encode(state.withLock({ $0.answers })) else { return }
            let staged = file + ".new"
            try? FileManager.default.createDirectory(atPath: (file as NSString).deletingLastPathComponent, withIntermediateDirectories: true,
                                                     attributes: [.posixPermissions: 0o700])
            guard FileManager.default.createFile(atPath: staged, contents: data, attributes: [.posixPermissions: 0o600]) else { return }
            if rename(staged, file) != 0 { try? FileManager.default.removeItem(atPath: staged) }
        }
    }

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
        if answer != nil { save() }
    }

    /// Marks the last count of `type` as failed (the warmer logs why).
    func countFailed(_ type: String) { _ = state.withLock { $0.failed.insert(type) } }
}
