import Foundation
import Logging
import ServiceLifecycle

/// Keeps the household's cross-chain overlaps (`DashboardQueries.householdOverlaps`)
/// computed ahead of the first view: every `interval` it looks at each chain's last
/// received bundle and merges again only the types whose answer is no longer cached.
/// A page then finds the answer made, rather than waiting for a merge over every chain
/// (seconds at 12 chains of 100,000 records).
struct OverlapWarmer<C: Clock>: Service where C.Duration == Duration {
    let queries: DashboardQueries
    let interval: Duration
    let clock: C
    let logger: Logger

    func run() async throws {
        queries.overlapAnswers.setWarmerRunning(true)
        defer { queries.overlapAnswers.setWarmerRunning(false) }
        while !Task.isShuttingDownGracefully {
            do {
                let started = clock.now
                let types = try await blocking { [queries] in try queries.warmOverlaps() }
                logger.debug("household overlaps ready", metadata: ["web.types": "\(types)", "web.seconds": "\(started.duration(to: clock.now))"])
            } catch {
                logger.warning("household overlaps could not be computed ahead", metadata: ["web.error": "\(error)"])
            }
            do { try await cancelWhenGracefulShutdown { try await clock.sleep(for: interval) } } catch { return }
        }
    }
}

extension WebServer {
    /// The `Service` that computes the household's overlaps ahead of the pages: every `interval` it
    /// looks for chains that received a bundle (a cheap read) and counts their types again.
    public func overlapWarmer(every interval: Duration = .seconds(10)) -> some Service {
        OverlapWarmer(queries: queries, interval: interval, clock: ContinuousClock(), logger: logger)
    }
}
