import Foundation
import HealthProbeArchive
import HealthProbeNode
import Logging
import ServiceLifecycle

/// Syncs each capture home to its enrolled household server after it records an
/// observation: homes are put on the `SyncQueue` by the ingest endpoint and the
/// watched folder; a failed sync is tried again with backoff, its error shown in the
/// status. A home that is not enrolled is left alone (the status says how to enroll it).
/// A `Service` for `hp-node serve`'s `ServiceGroup`; clock and wall time injected.
public struct CaptureSync<C: Clock>: Service where C.Duration == Duration {
    let queue: SyncQueue
    let archives: OpenArchives
    let status: ServeStatus
    let surfaceName: @Sendable (String) -> String
    let clock: C
    let now: @Sendable () -> Double
    let logger: Logger
    /// How often the queue is looked at.
    let tick: Duration

    public init(queue: SyncQueue, archives: OpenArchives, status: ServeStatus, surfaceName: @escaping @Sendable (String) -> String, clock: C,
                now: @escaping @Sendable () -> Double, logger: Logger, tick: Duration = .milliseconds(500)) {
        self.queue = queue
        self.archives = archives
        self.status = status
        self.surfaceName = surfaceName
        self.clock = clock
        self.now = now
        self.logger = logger
        self.tick = tick
    }

    public func run() async throws {
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            for root in queue.dueNow(now()) {
                await syncOnce(root)
            }
            do { try await cancelWhenGracefulShutdown { try await clock.sleep(for: tick) } } catch { break }
        }
    }

    /// One attempt to sync the home at `root`.
    func syncOnce(_ root: String) async {
        let home = ArchiveHome(root: root)
        let surface = surfaceName(root)
        do {
            guard let enrollment = try NodeEnrollment.load(home.keyStore) else {
                queue.succeeded(root)
                status.update(now: now()) { s in
                    s.surfaces[surface, default: .init()].enrolled = false
                    s.surfaces[surface, default: .init()].lastSyncError = "not enrolled: run `hp-node --home \(root) enroll TOKEN` with a token from `hp-server enroll`"
                }
                return
            }
            let node = try archives.node(home)
            let report = try await SyncClient(node: node, outbox: root + "/outbox", logger: logger).sync(enrollment)
            queue.succeeded(root)
            status.update(now: now()) { s in
                s.surfaces[surface, default: .init()].enrolled = true
                s.surfaces[surface, default: .init()].lastSyncAt = now()
                s.surfaces[surface, default: .init()].lastSyncSequence = report.lastSequence
                s.surfaces[surface, default: .init()].lastSyncError = nil
                s.surfaces[surface, default: .init()].nextSyncAttemptAt = nil
            }
            logger.info("capture synced", metadata: ["surface": "\(surface)", "sent": "\(report.sent)", "sequence": "\(report.lastSequence)"])
        } catch {
            let next = queue.failed(root, now: now())
            status.update(now: now()) { s in
                s.surfaces[surface, default: .init()].lastSyncError = "\(error)"
                s.surfaces[surface, default: .init()].syncFailures += 1
                s.surfaces[surface, default: .init()].nextSyncAttemptAt = next
            }
            logger.warning("capture sync failed; will try again", metadata: ["surface": "\(surface)", "error": "\(error)", "next_attempt_in_s": "\(Int(next - now()))"])
        }
    }
}
