import Foundation

/// Supplies the current time as Unix seconds UTC. Injected so tests control time.
public protocol ArchiveClock: Sendable {
    func now() -> Double
}

/// The system clock.
public struct SystemClock: ArchiveClock {
    public init() {}
    public func now() -> Double { Date().timeIntervalSince1970 }
}

/// A clock that returns a fixed, settable time (tests, simulator).
/// `@unchecked Sendable`: `value` is read and written only under `lock`.
public final class ManualClock: ArchiveClock, @unchecked Sendable {
    private let lock = NSLock()
    private var value: Double
    public init(_ start: Double) { value = start }
    public func now() -> Double { lock.withLock { value } }
    public func set(_ t: Double) { lock.withLock { value = t } }
    public func advance(_ seconds: Double) { lock.withLock { value += seconds } }
}
