import Foundation
import HealthProbeArchive
import HealthProbeImport
import Logging
import NIOPosix

/// Records posted bodies one at a time, in arrival order, on a thread of its own: a
/// body is kept durably, decoded, recorded as one observation of its automation's
/// chain, and its outcome kept, before its poster is answered. Concurrent posts wait
/// their turn; none is lost.
public final class IngestProcessor: Sendable {
    /// What a post became.
    public struct Outcome: Sendable {
        public var recorded: BodyStore.Recorded
        /// True when the same bytes had been recorded before: nothing new was written.
        public var duplicate: Bool
    }

    let homes: CaptureHomes
    let archives: OpenArchives
    let pool: NIOThreadPool
    let logger: Logger
    /// The UTC offset of the phone's days, for windows such as `yesterday`.
    let utcOffset: @Sendable (Double) -> Int
    let decoder: HAEDecoder

    public init(homes: CaptureHomes, archives: OpenArchives, decoder: HAEDecoder = HAEDecoder(), logger: Logger,
                utcOffset: @escaping @Sendable (Double) -> Int = { TimeZone.current.secondsFromGMT(for: Date(timeIntervalSince1970: $0)) }) {
        self.homes = homes
        self.archives = archives
        self.decoder = decoder
        self.logger = logger
        self.utcOffset = utcOffset
        // One thread: bodies are recorded strictly one after another, in the order they came.
        pool = NIOThreadPool(numberOfThreads: 1)
        pool.start()
    }

    deinit { try? pool.syncShutdownGracefully() }

    /// The directory an automation's arriving bodies are written to (`IncomingBody`).
    public func bodyDirectory(_ automation: String) -> String { homes.bodies(automation).directory }

    /// Records `body` (arrived whole and synced, `IncomingBody`) posted for `automation` at
    /// `now` with the automation's settings.
    public func ingest(automation: String, body: IncomingBody, period: HAEPeriod?, aggregation: HAEAggregation?, now: Double) async throws -> Outcome {
        try await pool.runIfActive { [self] in
            let store = homes.bodies(automation)
            if let done = try store.recorded(body.sha256) {
                unlink(body.path)
                return Outcome(recorded: done, duplicate: true)
            }
            let received = BodyStore.Received(sha256: body.sha256, bytes: body.bytes, receivedAt: now, period: period?.rawValue,
                                              aggregation: aggregation?.rawValue, utcOffsetSeconds: utcOffset(now))
            try store.adopt(body, received)
            return Outcome(recorded: try record(automation: automation, body: try store.checkedBody(body.sha256, verify: false), received: received), duplicate: false)
        }
    }

    /// Records `bytes` already in memory (the benchmark): kept as a posted body is.
    public func ingest(automation: String, bytes: [UInt8], period: HAEPeriod?, aggregation: HAEAggregation?, now: Double) async throws -> Outcome {
        let body = try await IncomingBody.write(bytes, into: bodyDirectory(automation))
        return try await ingest(automation: automation, body: body, period: period, aggregation: aggregation, now: now)
    }

    /// Records every body a crash left kept but unrecorded, oldest first; returns how many.
    public func recoverPending() async throws -> Int {
        try await pool.runIfActive { [self] in
            var n = 0
            for automation in homes.automations() {
                let store = homes.bodies(automation)
                let swept = store.sweepIncoming()
                if swept > 0 { logger.notice("removed bodies that never arrived whole", metadata: ["automation": "\(automation)", "files": "\(swept)"]) }
                for received in try store.pending() {
                    _ = try record(automation: automation, body: try store.checkedBody(received.sha256), received: received)
                    n += 1
                }
            }
            return n
        }
    }

    /// Decodes and records one kept body, then keeps its outcome. Runs on the pool's thread.
    /// Two streaming passes: the first checks the whole body (a bad field refuses it before
    /// anything is written), the second records it (docs/decisions/2026-11-29-hae-streaming.md).
    func record(automation: String, body: HAEBody, received: BodyStore.Received) throws -> BodyStore.Recorded {
        let store = homes.bodies(automation)
        var out = BodyStore.Recorded(sha256: received.sha256, outcome: "refused", recordedAt: received.receivedAt)
        var d = decoder
        d.aggregation = received.aggregation
        let scan: HAEScan
        do {
            scan = try d.scan(body)
        } catch let error as HAEDecodeError {
            out.reason = error.message
            try store.markRecorded(out)
            logger.notice("ingest body refused", metadata: ["automation": "\(automation)", "sha256": "\(received.sha256.prefix(16))", "path": "\(error.path)"])
            return out
        }
        // Local days are the phone's: the offset its dates carry, else the node's zone.
        let window = HAEWindow(period: received.period.flatMap(HAEPeriod.init(rawValue:)), aggregation: received.aggregation.flatMap(HAEAggregation.init(rawValue:)),
                               now: received.receivedAt, utcOffsetSeconds: scan.utcOffsetSeconds ?? received.utcOffsetSeconds)
        let node = try archives.node(homes.automation(automation))
        let r = try HAECapture(node: node).record(body, decoder: d, scan: scan, window: window)
        out.outcome = "recorded"
        out.observationId = r.observationId
        out.status = r.status
        out.records = r.records
        out.types = r.types
        out.appeared = r.appeared
        out.changed = r.changed
        out.unchanged = r.unchanged
        out.disappeared = r.disappeared
        out.unrecognised = r.unrecognised
        out.latenessByType = r.latenessByType
        try store.markRecorded(out)
        logger.info("ingest body recorded", metadata: ["automation": "\(automation)", "observation": "\(r.observationId)",
                                                       "records": "\(r.records)", "disappeared": "\(r.disappeared)"])
        return out
    }
}
