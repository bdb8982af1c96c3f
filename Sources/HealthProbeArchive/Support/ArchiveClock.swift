import Foundation
import Synchronization

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
public final class ManualClock: ArchiveClock, Sendable {
    private let value: Mutex<Double>
    public init(_ start: Double) { value = Mutex(start) }
    public func now() -> Double { value.withLock { $0 } }
    public func set(_ t: Double) { value.withLock { $0 = t } }
    public func advance(_ seconds: Double) { value.withLock { $0 += seconds } }
}
