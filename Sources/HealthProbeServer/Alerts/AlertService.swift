import AsyncHTTPClient
import Foundation
import HealthProbeArchive
import Logging
import NIOPosix
import ServiceLifecycle

/// Evaluates every chain's conditions each `interval`, then delivers what the outbox holds.
/// A `Service` for the server's `ServiceGroup`; its clock and wall time are injected.
public struct AlertService<C: Clock>: Service where C.Duration == Duration {
    public struct Settings: Sendable {
        public var interval: Duration = .seconds(60)
        public var conditions = AlertConditions()
        public var reminders = AlertReminders()
        /// The dashboard's base URL (`https://host:port`), for evidence links; nil for none.
        public var pageBase: String?
        /// Server-level conditions for admins; nil: not evaluated.
        public var server: ServerConditions?
        /// Verification on a schedule (quick daily, full weekly by default); nil: none.
        public var verify: ScheduledVerify?
        /// The wait before retry `n` (1 is the first): 30 s doubling, at most 6 h.
        public var backoff: @Sendable (Int) -> Double = { min(6 * 3600, 30 * pow(2, Double(min($0 - 1, 20)))) }
        public init() {}
    }

    let registry: DeviceRegistry
    let sender: AlertSender
    let settings: Settings
    let clock: C
    let now: @Sendable () -> Double
    let logger: Logger
    let metrics: ServerMetrics?
    /// Reads the replicas for *loss found*; nil: loss is not evaluated.
    let lossScan: LossScan?

    public init(registry: DeviceRegistry, sender: AlertSender, settings: Settings = Settings(), clock: C,
                now: @escaping @Sendable () -> Double, logger: Logger, metrics: ServerMetrics? = nil, lossScan: LossScan? = nil) {
        self.metrics = metrics
        self.lossScan = lossScan
        self.registry = registry
        self.sender = sender
        self.settings = settings
        self.clock = clock
        self.now = now
        self.logger = logger
    }

    public func run() async throws {
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            do {
                _ = try await verifyDue()
                // SQLite and the loss scan's classification: off Swift's cooperative threads.
                _ = try await NIOThreadPool.singleton.runIfActive { try self.evaluate() }
                _ = try await deliver()
            } catch {
                logger.error("alert round failed", metadata: ["error": "\(error)"])
            }
            do { try await cancelWhenGracefulShutdown { try await clock.sleep(for: settings.interval) } } catch { break }
        }
    }

    /// One evaluation round over every owned chain.
    public func evaluate() throws -> DeviceRegistry.AlertRound {
        let t = now()
        let chains = try registry.ownedChains()
        var findings: [AlertFinding] = []
        for chain in chains {
            let facts = try registry.chainFacts(chain)
            let cadence = try registry.learnCadence(chain: chain, lastSync: facts.lastSync)
            var loss: AlertLoss.Facts?
            if let lossScan {
                try scanForLoss(chain, lossScan, now: t)
                loss = try registry.lossFacts(chain: chain)
            }
            findings += settings.conditions.findings(chain: chain, facts: facts, verification: try registry.verification(chain: chain),
                                                     mean: cadence.mean, override: cadence.override, loss: loss, now: t)
        }
        let base = settings.pageBase
        var evaluated = Set(AlertCondition.allCases)
        if lossScan == nil { evaluated.remove(.lossFound) }
        var keys = chains
        if let server = settings.server {
            keys.append(AlertCondition.serverKey)
            findings += server.findings(now: t, oldestFailingMessage: try registry.oldestFailingAlertMessage(),
                                        oldestPendingUpload: server.offsiteUploads ? try registry.oldestPendingUpload() : nil,
                                        snapshotDue: server.offsiteUploads ? try registry.offsiteSnapshotDue() : nil)
        } else {
            evaluated.subtract(AlertCondition.allCases.filter(\.isServerLevel))
        }
        let round = try registry.applyAlertRound(findings: findings, chains: keys, evaluated: evaluated, now: t,
                                                 reminders: settings.reminders, link: { path in base.map { $0 + path } })
        metrics?.alertRound(round)
        return round
    }

    /// Runs the verifications due on the schedule, one chain at a time, off Swift's cooperative
    /// threads; the result is recorded like an admin's run, and a failure fires *verification failed*
    /// in the evaluation that follows. Returns what ran.
    public func verifyDue() async throws -> [(chain: String, mode: ArchiveVerifier.Mode)] {
        guard let v = settings.verify else { return [] }
        var ran: [(chain: String, mode: ArchiveVerifier.Mode)] = []
        for chain in try registry.ownedChains() {
            guard let mode = try registry.dueVerification(chain: chain, now: now(), quickEvery: v.quickEvery, fullEvery: v.fullEvery) else { continue }
            let store = v.store
            do {
                // A full verification reads a whole replica (minutes at a million samples): on a thread
                // of its own, never holding one of NIO's few shared threads the sync sessions need.
                _ = try await StageThread.run(name: "healthprobe.verify") { try ServerVerifier.run(store, chain: chain, mode: mode) }
            } catch {
                logger.warning("scheduled verification failed to run", metadata: ["chain": "\(chain.prefix(12))", "mode": "\(mode.rawValue)", "error": "\(error)"])
            }
            try registry.recordScheduledVerification(chain: chain, mode: mode, now: now())
            ran.append((chain, mode))
        }
        return ran
    }

    /// Classifies the chain's observations applied since the last look and records any loss.
    /// A replica that cannot be read is logged and looked at again next round.
    func scanForLoss(_ chain: String, _ scan: LossScan, now: Double) throws {
        let after = try registry.lossExaminedThrough(chain: chain)
        let result: LossScan.Result?
        do { result = try scan.scan(chain: chain, after: after) } catch {
            logger.warning("loss scan failed", metadata: ["chain": "\(chain.prefix(12))", "error": "\(error)"])
            return
        }
        guard let result else { return }
        try registry.recordLossScan(chain: chain, through: result.through,
                                    loss: result.loss.map { ($0.observation, $0.detail, $0.page(chain: chain)) }, now: now)
    }

    /// Sends every due message once; a failure is retried later with backoff. Returns (delivered, failed).
    public func deliver() async throws -> (delivered: Int, failed: Int) {
        var delivered = 0, failed = 0
        var quiet: [String: QuietHours?] = [:]
        for m in try registry.dueAlertMessages(now: now()) {
            if quiet[m.person] == nil { quiet[m.person] = .some(try registry.quietHours(person: m.person)) }
            if let hours = quiet[m.person] ?? nil, let end = hours.end(after: now()) {
                try registry.postponeAlert(id: m.id, until: end)
                continue
            }
            do {
                try await sender.send(m)
                try registry.markAlertDelivered(id: m.id, now: now())
                delivered += 1
            } catch {
                try registry.markAlertFailed(id: m.id, error: "\(error)", now: now(), backoff: settings.backoff)
                logger.warning("alert delivery failed", metadata: ["channel": "\(m.channelID)", "attempts": "\(m.attempts + 1)", "error": "\(error)"])
                failed += 1
            }
        }
        metrics?.alertDeliveries(delivered: delivered, failed: failed)
        return (delivered, failed)
    }
}
