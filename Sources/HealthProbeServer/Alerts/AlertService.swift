import AsyncHTTPClient
import Foundation
import Logging
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

    public init(registry: DeviceRegistry, sender: AlertSender, settings: Settings = Settings(), clock: C,
                now: @escaping @Sendable () -> Double, logger: Logger, metrics: ServerMetrics? = nil) {
        self.metrics = metrics
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
                _ = try evaluate()
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
            findings += settings.conditions.findings(chain: chain, facts: facts, verification: try registry.verification(chain: chain),
                                                     mean: cadence.mean, override: cadence.override, now: t)
        }
        let base = settings.pageBase
        let round = try registry.applyAlertRound(findings: findings, chains: chains, evaluated: Set(AlertCondition.allCases), now: t,
                                                 reminders: settings.reminders, link: { chain in base.map { "\($0)/chains/\(chain)" } })
        metrics?.alertRound(round)
        return round
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
