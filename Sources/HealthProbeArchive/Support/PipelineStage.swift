import Foundation

/// A thread that produces elements for the caller through a `BoundedQueue` of
/// `depth`: the caller pulls with `next`, in order, while the thread works ahead.
/// An error of the producer is thrown by `next` after every element produced before
/// it. `cancel` stops the producer (its next `emit` throws) and waits for its end.
/// The body runs only on the stage's thread: what it captures moves there.
public final class ProducerStage<Element>: Sendable {
    private let queue: BoundedQueue<Element>
    private let thread: StageThread

    /// Starts `body` on a new thread (`stackSize` in bytes when given); `emit` hands an
    /// element over, waiting while `depth` wait, and throws once the caller cancelled.
    public init(name: String, depth: Int, stackSize: Int? = nil, _ body: @escaping (_ emit: (Element) throws -> Void) throws -> Void) {
        let queue = BoundedQueue<Element>(capacity: depth)
        self.queue = queue
        let box = UncheckedBox(body)
        thread = StageThread(name: name, stackSize: stackSize) {
            do {
                try box.value { try queue.put($0) }
                queue.close()
            } catch {
                queue.close(failure: error)
            }
        }
    }

    /// The next element; nil after the last. Throws the producer's error in order.
    public func next() throws -> Element? { try queue.take() }

    /// Waits for the producer's thread to end (after `next` returned nil or threw).
    public func join() { thread.join() }

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
public final class ConsumerStage<Element>: Sendable {
    private let queue: BoundedQueue<Element>
    private let thread: StageThread
    /// The body's first error.
    private let failure = FirstError()

    /// Starts the consuming thread (`stackSize` in bytes when given).
    public convenience init(name: String, depth: Int, stackSize: Int? = nil, _ body: @escaping (_ element: Element) throws -> Void) {
        self.init(name: name, depth: depth, stackSize: stackSize, batches: { first, _ in try body(first) })
    }

    /// Starts the consuming thread with a body that takes the next element and may go on
    /// with those already waiting: `more` returns the next waiting one, never waits for one.
    public init(name: String, depth: Int, stackSize: Int? = nil, batches body: @escaping (_ first: Element, _ more: () -> Element?) throws -> Void) {
        let queue = BoundedQueue<Element>(capacity: depth)
        self.queue = queue
        let box = UncheckedBox(body), failure = self.failure
        thread = StageThread(name: name, stackSize: stackSize) {
            do {
                while let element = try queue.take() { try box.value(element, queue.poll) }
            } catch {
                failure.record(error)
                queue.cancel(error)
            }
        }
    }

    /// Elements submitted and not yet taken by the body.
    public var waiting: Int { queue.waiting }

    /// Queues `element`; waits while `depth` wait. Throws the body's first error.
    public func submit(_ element: consuming Element) throws {
        try failure.check()
        try queue.put(element)
    }

    /// No more elements: waits for the thread to process the rest and end.
    /// Throws the body's first error.
    public func finish() throws {
        queue.close()
        thread.join()
        try failure.check()
    }

    /// Drops what waits, lets the element in progress end, and waits for the thread; idempotent.
    public func cancel() {
        queue.cancel()
        queue.close()
        thread.join()
    }

    deinit { queue.close() }
}
