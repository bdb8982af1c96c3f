import Foundation

/// The bounded hand-off under every pipeline stage (`ProducerStage`, `ConsumerStage`):
/// at most `capacity` elements wait, so memory stays bounded whatever the input's size.
/// `put` waits while full, `take` while empty. The producing side ends it with `close`
/// (optionally with the error to deliver after the last element); the consuming side
/// stops it with `cancel`, after which `put` throws the reason.
/// `@unchecked Sendable`: every mutable property is read and written only under `condition` (an
/// element moves to the taking thread; the putting side gives it up).
public final class BoundedQueue<Element>: @unchecked Sendable {
    private let condition = NSCondition()
    /// A ring of `capacity` slots; a taken element's slot is emptied at once.
    private var slots: [Element?]
    private var head = 0
    private var count = 0
    private let capacity: Int
    private var closed = false
    private var failure: (any Error)?
    private var cancelReason: (any Error)?

    public init(capacity: Int) {
        self.capacity = max(capacity, 1)
        slots = Array(repeating: nil, count: self.capacity)
    }

    /// Adds `element`, waiting while `capacity` elements wait. Throws the cancel reason
    /// once the consuming side cancelled, or `CancellationError` after `close`.
    public func put(_ element: consuming Element) throws {
        condition.lock()
        defer { condition.unlock() }
        while count >= capacity && cancelReason == nil { condition.wait() }
        if let cancelReason { throw cancelReason }
        if closed { throw CancellationError() }
        slots[(head + count) % capacity] = element
        count += 1
        condition.broadcast()
    }

    /// The next element, waiting while none waits and the queue is open; nil once closed
    /// and empty, or cancelled. A `close(failure:)` error is thrown after the last element.
    public func take() throws -> Element? {
        condition.lock()
        defer { condition.unlock() }
        while count == 0 && !closed && cancelReason == nil { condition.wait() }
        if let e = removeFirst() { return e }
        if cancelReason == nil, let failure { throw failure }
        return nil
    }

    /// `put`, waiting until `deadline` at most: throws `WaitExpired` when no slot freed by then.
    public func put(_ element: consuming Element, waitingUntil deadline: ContinuousClock.Instant) throws {
        condition.lock()
        defer { condition.unlock() }
        while count >= capacity && cancelReason == nil {
            if !wait(until: deadline), count >= capacity && cancelReason == nil { throw WaitExpired() }
        }
        if let cancelReason { throw cancelReason }
        if closed { throw CancellationError() }
        slots[(head + count) % capacity] = element
        count += 1
        condition.broadcast()
    }

    /// Whether the consuming side cancelled (`put` throws from then on).
    public var isCancelled: Bool { condition.withLock { cancelReason != nil } }

    /// `take`, waiting until `deadline` at most: throws `WaitExpired` when none came by then.
    public func take(waitingUntil deadline: ContinuousClock.Instant) throws -> Element? {
        condition.lock()
        defer { condition.unlock() }
        while count == 0 && !closed && cancelReason == nil {
            if !wait(until: deadline), count == 0 && !closed && cancelReason == nil { throw WaitExpired() }
        }
        if let e = removeFirst() { return e }
        if cancelReason == nil, let failure { throw failure }
        return nil
    }

    /// Nothing came before the deadline of `take(waitingUntil:)`.
    public struct WaitExpired: Error {}

    /// The next element if one waits now, without waiting; nil otherwise (also once
    /// cancelled). Never throws: a `close(failure:)` error is left for `take`.
    public func poll() -> Element? {
        condition.withLock { removeFirst() }
    }

    /// Elements waiting now.
    public var waiting: Int { condition.withLock { count } }

    /// Waits until the queue is closed or cancelled, or until `deadline`; true when it is.
    public func isEnded(waitingUntil deadline: ContinuousClock.Instant) -> Bool {
        condition.withLock {
            while !closed && cancelReason == nil {
                if !wait(until: deadline) { break }
            }
            return closed || cancelReason != nil
        }
    }

    /// Waits (holding `condition`'s lock) until signalled or until `deadline`, a monotonic
    /// instant; false once it has passed. `NSCondition` waits for a wall-clock date, so each
    /// wait lasts at most a second and the deadline is looked at again: a wall clock set
    /// forward ends a wait early, never the deadline; one set back during a wait lengthens
    /// that one wait by as much (the deadline stays).
    private func wait(until deadline: ContinuousClock.Instant) -> Bool {
        let left = ContinuousClock.now.duration(to: deadline)
        guard left > .zero else { return false }
        let seconds = min(Double(left.components.seconds) + Double(left.components.attoseconds) / 1e18, 1)
        _ = condition.wait(until: Date(timeIntervalSinceNow: seconds))
        return ContinuousClock.now < deadline
    }

    private func removeFirst() -> Element? {
        guard count > 0, cancelReason == nil else { return nil }
        let e = slots[head].take()
        head = (head + 1) % capacity
        count -= 1
        condition.broadcast()
        return e
    }

    /// No more elements: `take` returns the waiting ones, then throws `failure` or returns nil.
    public func close(failure: (any Error)? = nil) {
        condition.withLock {
            if !closed { closed = true; self.failure = failure }
            condition.broadcast()
        }
    }

    /// The consuming side stopped: waiting elements are dropped, `put` throws `reason`.
    public func cancel(_ reason: any Error = CancellationError()) {
        condition.withLock {
            if cancelReason == nil { cancelReason = reason }
            for i in slots.indices { slots[i] = nil }
            head = 0
            count = 0
            condition.broadcast()
        }
    }
}
