import HealthProbeProtocol

/// Slows down repeated authentication failures from one peer address: the
/// n-th failure within `window` seconds is answered after
/// `min(base * 2^(n-1), maximum)` seconds. A success clears the address.
/// Pure bookkeeping: the caller passes the time and does the waiting.
public struct AuthThrottle: Sendable {
    public var base: Double
    public var maximum: Double
    public var window: Double
    private var failures: [String: (count: Int, last: Double)] = [:]

    public init(base: Double = 0.25, maximum: Double = 8, window: Double = 900) {
        self.base = base
        self.maximum = maximum
        self.window = window
    }

    /// Records a failure from `peer` at `now`; returns how long to wait before answering.
    public mutating func failure(peer: String, now: Double) -> Double {
        if failures.count > 10_000 { failures = failures.filter { now - $0.value.last < window } }
        var entry = failures[peer] ?? (0, now)
        if now - entry.last >= window { entry.count = 0 }
        entry.count += 1
        entry.last = now
        failures[peer] = entry
        return min(base * Double(1 << min(entry.count - 1, 20)), maximum)
    }

    public mutating func success(peer: String) { failures[peer] = nil }
}

/// The throttle shared by a server's connections.
actor SharedAuthThrottle {
    var throttle: AuthThrottle
    init(_ throttle: AuthThrottle) { self.throttle = throttle }
    func failure(peer: String, now: Double) -> Double { throttle.failure(peer: peer, now: now) }
    func success(peer: String) { throttle.success(peer: peer) }
}
