import Foundation
import Synchronization

/// Homes waiting to be synced, each with the time its next attempt is due and the
/// failures so far: a new observation makes its home due now; a failed sync waits
/// 30 s, doubling up to 30 min.
public final class SyncQueue: Sendable {
    struct Entry: Sendable { var due: Double; var failures: Int }
    private let entries = Mutex<[String: Entry]>([:])

    public init() {}

    /// `root` has something new to send: due at once.
    public func due(_ root: String, now: Double) {
        entries.withLock { e in
            e[root] = Entry(due: now, failures: e[root]?.failures ?? 0)
        }
    }

    /// The homes due at `now`, in name order.
    func dueNow(_ now: Double) -> [String] {
        entries.withLock { e in e.filter { $0.value.due <= now }.map(\.key).sorted() }
    }

    /// `root` synced: nothing more to do.
    func succeeded(_ root: String) { _ = entries.withLock { $0.removeValue(forKey: root) } }

    /// `root` could not sync: its next attempt, after the backoff.
    func failed(_ root: String, now: Double) -> Double {
        entries.withLock { e in
            let failures = (e[root]?.failures ?? 0) + 1
            let next = now + Self.backoff(failures)
            e[root] = Entry(due: next, failures: failures)
            return next
        }
    }

    /// The wait after `failures` failures in a row: 30 s doubling, at most 30 min.
    static func backoff(_ failures: Int) -> Double { min(1800, 30 * pow(2, Double(min(max(failures - 1, 0), 10)))) }
}
