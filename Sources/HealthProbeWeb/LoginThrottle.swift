import HealthProbeServer

/// Slows failed sign-ins per peer address and per name (`AuthThrottle`: each failure
/// within 15 minutes doubles the wait, up to the maximum). Attempts for one name, or
/// from one address, take turns: a second one waits until the first has been checked
/// and, if it failed, has waited out its delay, so concurrent guesses gain nothing.
/// A success clears only its own name: signing in to one's own account never shortens
/// the wait for guessing another's.
actor LoginThrottle {
    private var byPeer: AuthThrottle
    private var byName: AuthThrottle
    private var busy: Set<String> = []
    private var waiting: [String: [CheckedContinuation<Void, Never>]] = [:]
    /// Attempts queued behind one name or address beyond this are refused at once.
    let maxQueued = 16

    init(base: Double, maximum: Double) {
        byPeer = AuthThrottle(base: base, maximum: maximum)
        byName = AuthThrottle(base: base, maximum: maximum)
    }

    /// Runs `attempt` (the password check) when no other attempt for `name` or from `peer`
    /// is under way; after a failure, waits out the delay before letting the next one in.
    /// Returns `attempt`'s answer; nil when too many attempts already wait.
    func turn<T: Sendable>(peer: String, name: String, now: @Sendable () -> Double,
                           _ attempt: @Sendable () async throws -> T?) async throws -> T?? {
        let keys = ["n:" + name, "p:" + peer]
        guard keys.allSatisfy({ (waiting[$0]?.count ?? 0) < maxQueued }) else { return nil }
        for key in keys { await acquire(key) }
        defer { for key in keys { release(key) } }
        let result = try await attempt()
        if result == nil {
            let t = now()
            let wait = max(byPeer.failure(peer: peer, now: t), byName.failure(peer: name, now: t))
            try? await Task.sleep(for: .milliseconds(Int(wait * 1000)))
        } else {
            byName.success(peer: name)
        }
        return .some(result)
    }

    private func acquire(_ key: String) async {
        while busy.contains(key) {
            await withCheckedContinuation { waiting[key, default: []].append($0) }
        }
        busy.insert(key)
    }

    private func release(_ key: String) {
        busy.remove(key)
        guard var queue = waiting[key], !queue.isEmpty else { return }
        let next = queue.removeFirst()
        waiting[key] = queue.isEmpty ? nil : queue
        next.resume()
    }
}
