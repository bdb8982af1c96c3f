import Foundation

/// The package's one way to run blocking work beside the caller: a thread of its own
/// that runs one body and ends. `ProducerStage` and `ConsumerStage` run on it; async
/// code that must not hold a thread of NIO's pool for long (a hand-off that pool's
/// threads feed) awaits `run`. Short blocking calls from async code go to
/// `NIOThreadPool.singleton` instead.
public final class StageThread: Sendable {
    /// Closed when the body returned: `join` waits for that.
    private let ended = BoundedQueue<Void>(capacity: 1)

    /// Starts `body` on a new thread named `name` (`stackSize` in bytes when given).
    public init(name: String, stackSize: Int? = nil, _ body: @escaping @Sendable () -> Void) {
        let ended = self.ended
        let thread = Thread {
            body()
            ended.close()
        }
        thread.name = name
        if let stackSize { thread.stackSize = stackSize }
        thread.start()
    }

    /// Waits for the body to return; any number of callers, any number of times.
    public func join() {
        _ = try? ended.take()
    }

    /// Runs `body` on a thread of its own and awaits its result.
    public static func run<T: Sendable>(name: String, _ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { (done: CheckedContinuation<T, any Error>) in
            _ = StageThread(name: name) { done.resume(with: Result { try body() }) }
        }
    }
}
