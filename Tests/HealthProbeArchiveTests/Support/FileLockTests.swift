import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif
@testable import HealthProbeArchive

@Suite("File lock")
struct FileLockTests {
    /// What the probing thread saw, and when to stop it.
    final class Probe: @unchecked Sendable {
        private let lock = NSCondition()
        private var stopped = false, finished = false
        private(set) var closedUnderUs = 0, probes = 0
        var isStopped: Bool { lock.withLock { stopped } }
        func count(closed: Bool) { lock.withLock { probes += 1; if closed { closedUnderUs += 1 } } }
        func stop() { lock.withLock { stopped = true } }
        func done() { lock.withLock { finished = true; lock.broadcast() } }
        func waitDone() { lock.withLock { while !finished { lock.wait() } } }
    }

    @Test("a lock another holder has is refused, and the refused attempt closes its descriptor once: another thread's descriptors stay open")
    func busyClosesOnce() throws {
        let path = NSTemporaryDirectory() + "hp-lock-\(UUID().uuidString)"
        defer { unlink(path) }
        let held = try FileLock(path: path)
        let probe = Probe()
        // Another thread keeps a descriptor open for a moment and checks it is still open.
        let prober = Thread {
            while !probe.isStopped {
                let fd = open("/dev/null", O_RDONLY | O_CLOEXEC)
                guard fd >= 0 else { continue }
                for _ in 0..<200 { _ = getpid() }
                let closed = fcntl(fd, F_GETFD) == -1
                if !closed { close(fd) }
                probe.count(closed: closed)
            }
            probe.done()
        }
        prober.start()
        for _ in 0..<20_000 {
            #expect(throws: ArchiveError.self) { _ = try FileLock(path: path) }
        }
        probe.stop()
        probe.waitDone()
        #expect(probe.closedUnderUs == 0, "\(probe.closedUnderUs) of \(probe.probes) descriptors closed by a refused lock")
        #expect(probe.probes > 0)
        withExtendedLifetime(held) {}
    }
}
