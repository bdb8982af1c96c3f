import Dispatch
import Foundation
import Testing

/// The executor tests that block run on (a tool run and waited for, a polling loop): an
/// operation queue of its own with two threads per core. Swift's cooperative pool has one
/// thread per core (two here): tests that block those hold up every in-process server and
/// client of the tests beside them. Its width bounds how many such tests run at once: each
/// starts processes that want the cores, but spends much of its time waiting for them.
@available(macOS 15, iOS 18, *)
public final class BlockingWorkExecutor: TaskExecutor {
    public static let shared = BlockingWorkExecutor()
    private let queue: OperationQueue = {
        let q = OperationQueue()
        q.name = "healthprobe.tests.blocking-work"
        q.maxConcurrentOperationCount = max(4, 2 * ProcessInfo.processInfo.activeProcessorCount)
        return q
    }()
    /// Set on this executor's threads while they run a job (what `isOnBlockingWorkThread` reads).
    static let marker = "healthprobe.tests.blocking-work"

    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedTaskExecutor()
        queue.addOperation {
            Thread.current.threadDictionary[Self.marker] = true
            defer { Thread.current.threadDictionary[Self.marker] = nil }
            job.runSynchronously(on: executor)
        }
    }

    /// True on a thread of this executor (tests of the trait).
    public static var isOnBlockingWorkThread: Bool { Thread.current.threadDictionary[marker] as? Bool == true }
}

/// A suite trait: each of its tests runs on `BlockingWorkExecutor`, never on a cooperative
/// thread. For suites whose tests run the built tools and wait for them.
public struct BlockingWorkTrait: SuiteTrait, TestTrait, TestScoping {
    public var isRecursive: Bool { true }

    public func scopeProvider(for test: Test, testCase: Test.Case?) -> BlockingWorkTrait? { testCase == nil ? nil : self }

    public func provideScope(for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void) async throws {
        if #available(macOS 15, iOS 18, *) {
            try await withTaskExecutorPreference(BlockingWorkExecutor.shared) { try await function() }
        } else {
            try await function()
        }
    }
}

extension Trait where Self == BlockingWorkTrait {
    /// The suite's tests block (run tools and wait for them): they run off the cooperative threads.
    public static var blocksOnTools: Self { BlockingWorkTrait() }
}
