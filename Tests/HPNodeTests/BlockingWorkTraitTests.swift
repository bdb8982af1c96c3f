import Foundation
import Testing
import HealthProbeTestSupport

/// Suites whose tests run the built tools and wait for them (`.blocksOnTools`) run each
/// test on threads of their own, never on Swift's cooperative threads.
@Suite("Tests that block run off the cooperative threads", .blocksOnTools)
struct BlockingWorkTraitTests {
    @Test("a synchronous test of such a suite runs on the blocking-work executor")
    func synchronousBody() {
        #expect(BlockingWorkExecutor.isOnBlockingWorkThread)
    }

    @Test("an asynchronous one too, before and after it awaits")
    func asynchronousBody() async throws {
        #expect(BlockingWorkExecutor.isOnBlockingWorkThread)
        try await Task.sleep(for: .milliseconds(5))
        #expect(BlockingWorkExecutor.isOnBlockingWorkThread)
    }
}

@Suite("Tests without the trait")
struct CooperativeTests {
    @Test("run on the cooperative threads as usual")
    func cooperative() async {
        #expect(!BlockingWorkExecutor.isOnBlockingWorkThread)
    }
}
