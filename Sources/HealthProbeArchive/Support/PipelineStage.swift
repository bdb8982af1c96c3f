import Foundation

/// A thread that produces elements for the caller through a `BoundedQueue` of
/// `depth`: the caller pulls with `next`, in order, while the thread works ahead.
/// An error of the producer is thrown by `next` after every element produced before
/// it. `cancel` stops the producer (its next `emit` throws) and waits for its end.
/// The body runs only on the stage's thread: what it captures moves there.
/// `@unchecked Sendable`: immutable (`let` queue and semaphore); `BoundedQueue` locks its own state.
public final class ProducerStage<Element>: @unchecked Sendable {
    private let queue: BoundedQueue<Element>
    private let ended = DispatchSemaphore(value: 0)

    /// Starts `body` on a new thread (`stackSize` in bytes when given); `emit` hands an
    /// element over, waiting while `depth` wait, and throws once the caller cancelled.
    public init(name: String, depth: Int, stackSize: Int? = nil, _ body: @escaping (_ emit: (Element) throws -> Void) throws -> Void) {
        let queue = BoundedQueue<Element>(capacity: depth)
        self.queue = queue
        let box = UncheckedBox(body), ended = self.ended
        let thread = Thread {
            do {
                try box.value { try queue.put($0) }
                queue.close()
            } catch {
                queue.close(failure: error)
            }
            ended.signal()
        }
        thread.name = name
        if let stackSize { thread.stackSize = stackSize }
        thread.start()
    }

    /// The next element; nil after the last. Throws the producer's error in order.
    public func next() throws -> Element? { try queue.take() }

    /// Waits for the producer's thread to end (after `next` returned nil or threw).
    public func join() {
        ended.wait()
        ended.signal()
    }

    /// Stops the producer early and waits for its thread to end; idempotent.
    public func cancel() {
        queue.cancel()
        join()
    }

    deinit { queue.cancel() }
}

/// A thread that consumes what the caller submits, in order, through a `BoundedQueue`
/// of `depth`: `submit` waits while `depth` elements wait. The first error of the body
/// stops the stage: later submissions throw it, waiting elements are dropped, and
/// `finish` throws it. The body runs only on the stage's thread.
/// `@unchecked Sendable`: immutable (`let` queue, semaphore and state); `BoundedQueue` and `State` lock their own.
public final class ConsumerStage<Element>: @unchecked Sendable {
    private let queue: BoundedQueue<Element>
    private let ended = DispatchSemaphore(value: 0)
    private let state: State

    /// `@unchecked Sendable`: `failure` is read and written only under `lock`.
    private final class State: @unchecked Sendable {
        let lock = NSLock()
        var failure: (any Error)?
        var error: (any Error)? { lock.withLock { failure } }
    }

    /// Starts the consuming thread (`stackSize` in bytes when given).
    public init(name: String, depth: Int, stackSize: Int? = nil, _ body: @escaping (_ element: Element) throws -> Void) {
        let queue = BoundedQueue<Element>(capacity: depth)
        let state = State()
        self.queue = queue
        self.state = state
        let box = UncheckedBox(body), ended = self.ended
        let thread = Thread {
            do {
                while let element = try queue.take() { try box.value(element) }
            } catch {
                state.lock.withLock { state.failure = error }
                queue.cancel(error)
            }
            ended.signal()
        }
        thread.name = name
        if let stackSize { thread.stackSize = stackSize }
        thread.start()
    }

    /// Queues `element`; waits while `depth` wait. Throws the body's first error.
    public func submit(_ element: Element) throws {
        if let e = state.error { throw e }
        try queue.put(element)
    }

    /// No more elements: waits for the thread to process the rest and end.
    /// Throws the body's first error.
    public func finish() throws {
        queue.close()
        ended.wait()
        ended.signal()
        if let e = state.error { throw e }
    }

    /// Drops what waits, lets the element in progress end, and waits for the thread; idempotent.
    public func cancel() {
        queue.cancel()
        queue.close()
        ended.wait()
        ended.signal()
    }

    deinit { queue.close() }
}
