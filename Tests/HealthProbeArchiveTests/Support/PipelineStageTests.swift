import Foundation
import Testing
@testable import HealthProbeArchive

/// The bounded stages every pipeline is built on: order, the bound, errors in order,
/// cancellation, and no thread left behind.
@Suite("Pipeline stages")
struct PipelineStageTests {
    struct Boom: Error, Equatable { let at: Int }

    /// A counter several threads update.
    final class Counter: @unchecked Sendable {
        private let lock = NSLock()
        private var value = 0, peak = 0
        func add(_ n: Int) { lock.withLock { value += n; peak = max(peak, value) } }
        var current: Int { lock.withLock { value } }
        var maximum: Int { lock.withLock { peak } }
    }

    @Test("a producer hands over every element in order and never runs more than its depth ahead")
    func producerOrderAndBound() throws {
        let ahead = Counter()
        let stage = ProducerStage<Int>(name: "test.producer", depth: 3) { emit in
            for i in 0..<10_000 { ahead.add(1); try emit(i) }
        }
        var expected = 0
        while let i = try stage.next() {
            #expect(i == expected)
            expected += 1
            ahead.add(-1)
            if i % 1000 == 0 { Thread.sleep(forTimeInterval: 0.002) }
        }
        stage.join()
        #expect(expected == 10_000)
        // Produced but not yet taken: the queue's depth, plus the one being put.
        #expect(ahead.maximum <= 3 + 1 + 1, "ran \(ahead.maximum) ahead")
    }

    @Test("a producer's error comes after every element produced before it")
    func producerErrorInOrder() throws {
        let stage = ProducerStage<Int>(name: "test.producer", depth: 2) { emit in
            for i in 0..<5 { try emit(i) }
            throw Boom(at: 5)
        }
        var seen: [Int] = []
        #expect(throws: Boom(at: 5)) { while let i = try stage.next() { seen.append(i) } }
        #expect(seen == [0, 1, 2, 3, 4])
    }

    @Test("cancelling a producer stops it: its emit throws and its thread ends")
    func producerCancel() throws {
        let produced = Counter()
        let stopped = Counter()
        let stage = ProducerStage<Int>(name: "test.producer", depth: 2) { emit in
            do {
                for i in 0..<1_000_000 { try emit(i); produced.add(1) }
            } catch {
                stopped.add(1)
                throw error
            }
        }
        #expect(try stage.next() == 0)
        stage.cancel()
        #expect(stopped.current == 1)
        #expect(produced.current < 10)
    }

    @Test("a consumer processes in order; finish waits for the last element")
    func consumerOrder() throws {
        let lock = NSLock()
        var got: [Int] = []
        let stage = ConsumerStage<Int>(name: "test.consumer", depth: 2) { i in
            Thread.sleep(forTimeInterval: 0.0005)
            lock.withLock { got.append(i) }
        }
        for i in 0..<60 { try stage.submit(i) }
        try stage.finish()
        #expect(lock.withLock { got } == Array(0..<60))
    }

    @Test("a consumer's first error stops it: submit and finish throw it and nothing more runs")
    func consumerError() throws {
        let ran = Counter()
        let stage = ConsumerStage<Int>(name: "test.consumer", depth: 2) { i in
            if i == 3 { throw Boom(at: 3) }
            ran.add(1)
        }
        var thrown: (any Error)?
        for i in 0..<1000 {
            do { try stage.submit(i) } catch { thrown = error; break }
        }
        #expect((thrown as? Boom) == Boom(at: 3))
        #expect(throws: Boom(at: 3)) { try stage.finish() }
        #expect(ran.current == 3)
    }

    @Test("a dropped stage's thread ends and releases what its body held")
    func noThreadLeftBehind() throws {
        final class Token: @unchecked Sendable {}
        weak var held: Token?
        do {
            let token = Token()
            held = token
            let stage = ConsumerStage<Token>(name: "test.consumer", depth: 1) { _ in }
            try stage.submit(token)
            try stage.finish()
        }
        // The element was released by the time finish returned: nothing of it stays with the thread.
        #expect(held == nil)
        weak var producerHeld: Token?
        do {
            let token = Token()
            producerHeld = token
            let stage = ProducerStage<Int>(name: "test.producer", depth: 1) { emit in
                _ = token
                for i in 0... { try emit(i) }
            }
            _ = try stage.next()
        }
        // Dropping the producer cancels it; its body (and what it captured) goes with its thread.
        for _ in 0..<200 where producerHeld != nil { Thread.sleep(forTimeInterval: 0.005) }
        #expect(producerHeld == nil)
    }

    @Test("a batching consumer goes on with the elements already waiting, never waits for more, and keeps their order")
    func consumerBatches() throws {
        let gate = BoundedQueue<Void>(capacity: 1)
        let lock = NSLock()
        var batches: [[Int]] = []
        let stage = ConsumerStage<Int>(name: "test.batches", depth: 8, batches: { first, more in
            if first == 0 { _ = try gate.take() }  // holds the thread while 1...5 queue up
            var batch = [first]
            while let next = more() { batch.append(next) }
            lock.withLock { batches.append(batch) }
        })
        let deadline = Date().addingTimeInterval(10)
        try stage.submit(0)
        while stage.waiting > 0 && Date() < deadline { usleep(1000) }  // 0 taken: the thread waits at the gate
        for i in 1...5 { try stage.submit(i) }
        while stage.waiting < 5 && Date() < deadline { usleep(1000) }
        #expect(stage.waiting == 5)
        try gate.put(())
        while lock.withLock({ batches.count }) < 1 && Date() < deadline { usleep(1000) }
        // Once the first batch ended, a later element starts a batch of its own.
        try stage.submit(6)
        try stage.finish()
        #expect(lock.withLock { batches } == [[0, 1, 2, 3, 4, 5], [6]])
        #expect(stage.waiting == 0)
    }

    @Test("StageThread.run awaits its body's result or error")
    func stageThreadRun() async throws {
        let ran = Counter()
        let value = try await StageThread.run(name: "test.run") { () -> Int in
            ran.add(1)
            return 42
        }
        #expect(value == 42)
        #expect(ran.current == 1)
        await #expect(throws: Boom(at: 7)) { try await StageThread.run(name: "test.run") { () throws -> Int in throw Boom(at: 7) } }
    }

    @Test("a stage thread's join waits for its body, any number of times")
    func stageThreadJoin() {
        let ran = Counter()
        let thread = StageThread(name: "test.join") {
            Thread.sleep(forTimeInterval: 0.02)
            ran.add(1)
        }
        thread.join()
        #expect(ran.current == 1)
        thread.join()
    }

    @Test("waiting for a queue's end gives up at the deadline, and returns at once once it is closed")
    func queueEndWithDeadline() {
        let queue = BoundedQueue<Int>(capacity: 1)
        let start = ContinuousClock.now
        #expect(!queue.isEnded(waitingUntil: start + .milliseconds(50)))
        #expect(ContinuousClock.now - start >= .milliseconds(50))
        let closer = StageThread(name: "test.close") {
            Thread.sleep(forTimeInterval: 0.02)
            queue.close()
        }
        #expect(queue.isEnded(waitingUntil: .now + .seconds(10)))
        closer.join()
        #expect(queue.isEnded(waitingUntil: .now))
        #expect(queue.poll() == nil)
    }

    @Test("a wait with a deadline (monotonic) longer than one wait of the condition lasts until it, then put and take give up: WaitExpired")
    func queueWaitsPastOneSlice() throws {
        let queue = BoundedQueue<Int>(capacity: 1)
        var start = ContinuousClock.now
        #expect(throws: BoundedQueue<Int>.WaitExpired.self) { _ = try queue.take(waitingUntil: start + .milliseconds(1300)) }
        #expect(ContinuousClock.now - start >= .milliseconds(1300))
        try queue.put(1)
        start = .now
        #expect(throws: BoundedQueue<Int>.WaitExpired.self) { try queue.put(2, waitingUntil: start + .milliseconds(200)) }
        #expect(ContinuousClock.now - start >= .milliseconds(200))
        #expect(try queue.take(waitingUntil: .now + .seconds(1)) == 1)
    }
}
