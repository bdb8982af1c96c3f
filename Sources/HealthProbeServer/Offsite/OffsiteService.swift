import Foundation
import HealthProbeArchive
import HealthProbeProtocol
import Logging
import ServiceLifecycle

/// Drains the upload queue in the background: no device's acknowledgement waits
/// for object storage. At start (and every `backfillInterval`) it backfills the queue,
/// and it uploads a registry snapshot; then it uploads queued bundles in order, and after a round that
/// uploaded any, or once the registry changed (`changeMark`), a new snapshot (at most one per `snapshotInterval`). A failure
/// leaves the bundle queued and is retried after `retryInterval`.
public struct OffsiteService<C: Clock>: Service where C.Duration == Duration {
    public struct Settings: Sendable {
        /// How often an empty queue is looked at again.
        public var pollInterval: Duration = .seconds(2)
        /// How long after a failed upload the next is tried.
        public var retryInterval: Duration = .seconds(15)
        /// How often the stored bundles are looked for ones not queued (also at start).
        public var backfillInterval: Duration = .seconds(3600)
        /// The shortest time between two registry snapshots.
        public var snapshotInterval: Duration = .seconds(300)
        /// Complete registry snapshots kept in the bucket; older ones are deleted after each new one.
        public var keepSnapshots = 48
        /// How often the time served while a snapshot is due is added up in the registry
        /// (`backup_failing` reads it): a run shorter than this adds nothing.
        public var servedCountInterval: Duration = .seconds(15)
        public var batch = 32
        public init() {}
    }

    let uploader: OffsiteUploader
    let settings: Settings
    let clock: C
    let now: @Sendable () -> Double
    let logger: Logger
    let metrics: ServerMetrics?

    public init(uploader: OffsiteUploader, settings: Settings = Settings(), clock: C, now: @escaping @Sendable () -> Double, logger: Logger,
                metrics: ServerMetrics? = nil) {
        self.metrics = metrics
        self.uploader = uploader
        self.settings = settings
        self.clock = clock
        self.now = now
        self.logger = logger
    }

    public func run() async throws {
        var lastBackfill: C.Instant?
        var snapshotDue = true
        /// Since when this run's serving while a snapshot is due has not been added up yet; nil
        /// until this run recorded in the registry that one is due (`backup_failing` reads both).
        var servedUncounted: C.Instant?
        var lastSnapshot: C.Instant?
        /// Adds the time served since the last count, here (one short write, done also when the
        /// task is cancelled, which the thread pool would refuse), and stops counting.
        func countServed() {
            guard let from = servedUncounted else { return }
            try? uploader.registry.countOffsiteSnapshotDue(served: from.duration(to: clock.now).seconds)
            servedUncounted = nil
        }
        /// Records in the registry since when a snapshot is due, once while it is, and adds up
        /// the time this run served while it is, every `servedCountInterval` (`backup_failing` reads both).
        func recordDue() async throws {
            guard snapshotDue else { return }
            let registry = uploader.registry
            guard let from = servedUncounted else {
                let t = now()
                try await OffsiteUploader.blocking { try registry.markOffsiteSnapshotDue(now: t) }
                servedUncounted = clock.now
                return
            }
            let to = clock.now
            guard from.duration(to: to) >= settings.servedCountInterval else { return }
            let seconds = from.duration(to: to).seconds
            try await OffsiteUploader.blocking { try registry.countOffsiteSnapshotDue(served: seconds) }
            servedUncounted = to
        }
        /// The registry's change mark when the last snapshot was taken: a revocation or an
        /// enrollment with no bundle after it must reach the bucket too.
        var snapshotMark: String?
        var pausedLogged = false
        /// When the prefix was last checked for a second writer (`SnapshotWriters`).
        var lastCheck: C.Instant?
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            var pause = settings.pollInterval
            // A restored copy not adopted: nothing goes to the bucket (looked at every round,
            // so `hp-server adopt` takes effect while serving).
            if let notice = RestoredCopy.notice(uploader.store.root, "uploads to object storage") {
                if !pausedLogged { logger.warning("\(notice)") }
                pausedLogged = true
                countServed()  // a pause has its own alert: its time is not counted
                do { try await cancelWhenGracefulShutdown { try await clock.sleep(for: settings.pollInterval) } } catch { break }
                continue
            }
            if pausedLogged {
                logger.notice("uploads to object storage resume: the data directory was adopted")
                servedUncounted = nil  // adopt forgot the old home's (`forgetOffsiteSnapshots`): recorded again
            }
            pausedLogged = false
            do {
                // At once when the server starts (before anything waits on the store), and when one falls due below.
                try await recordDue()
                // The prefix is checked for a second writer before the first upload, every
                // snapshot interval and before each snapshot, and taken over when `adopt` asked.
                // A check that fails (the store down) does not stop the round: its uploads fail and are
                // counted as they were; the check before a snapshot must succeed.
                let takeover = SnapshotWriters.takeoverRequested(uploader.store.root)
                var checkedThisRound = false
                if takeover || lastCheck.map({ $0.duration(to: clock.now) >= settings.snapshotInterval }) ?? true {
                    do {
                        guard try await mayWrite(takeover: takeover) else { throw SecondWriter() }
                        lastCheck = clock.now
                        checkedThisRound = true
                    } catch let error where !(error is SecondWriter) {
                        logger.warning("the bucket prefix could not be checked for a second writer; tried again next round", metadata: ["error": "\(error)"])
                    }
                }
                if lastBackfill.map({ $0.duration(to: clock.now) >= settings.backfillInterval }) ?? true {
                    let (uploader, t) = (uploader, now())
                    let chains = try await OffsiteUploader.blocking { try uploader.backfill(now: t) }
                    lastBackfill = clock.now
                    logger.debug("offsite backfill queued the stored bundles not queued", metadata: ["chains": "\(chains)"])
                }
                let (uploaded, failed) = await round()
                // The queue's length (metrics) and the registry's change mark (snapshots), in one hop to the pool.
                let registry = uploader.registry
                let (pending, mark) = (try? await OffsiteUploader.blocking { (try? registry.pendingUploadCount(), try? registry.changeMark()) }) ?? (nil, nil)
                metrics?.offsiteRound(uploaded: uploaded, failed: failed, pending: pending, now: now())
                if uploaded > 0 {
                    snapshotDue = true
                    logger.info("offsite bundles uploaded", metadata: ["bundles": "\(uploaded)", "pending": "\(pending.map(String.init) ?? "?")"])
                }
                if let mark, mark != snapshotMark { snapshotDue = true }
                try await recordDue()
                if failed > 0 { pause = settings.retryInterval }
                if snapshotDue, failed == 0, lastSnapshot.map({ $0.duration(to: clock.now) >= settings.snapshotInterval }) ?? true {
                    // Checked before it: at the round's start (this round's uploads came after), or now.
                    if !checkedThisRound {
                        guard try await mayWrite(takeover: false) else { throw SecondWriter() }
                        lastCheck = clock.now
                    }
                    let key = try await uploader.snapshot(now: now())
                    lastSnapshot = clock.now
                    snapshotMark = mark
                    try await OffsiteUploader.blocking { try registry.clearOffsiteSnapshotDue() }
                    servedUncounted = nil
                    snapshotDue = false
                    logger.info("offsite registry snapshot uploaded", metadata: ["key": "\(key)"])
                    metrics?.offsiteSnapshot(now: now())
                    // Never fatal: a snapshot that could not be deleted now is deleted after the next one.
                    do {
                        let deleted = try await uploader.pruneSnapshots(keep: settings.keepSnapshots)
                        if deleted > 0 { logger.info("offsite snapshots pruned", metadata: ["snapshots": "\(deleted)"]) }
                    } catch {
                        logger.warning("offsite snapshots could not be pruned", metadata: ["error": "\(error)"])
                    }
                }
            } catch is SecondWriter {
                // Paused: the next round finds `offsite-conflict` and waits for `adopt`.
            } catch {
                pause = settings.retryInterval
                logger.error("offsite round failed; retrying", metadata: ["error": "\(error)"])
            }
            let wait = pause
            do { try await cancelWhenGracefulShutdown { try await clock.sleep(for: wait) } } catch { break }
        }
        // A server that stops adds what it served since the last count (one killed loses that much).
        countServed()
    }

    /// `mayWrite` found a second writer: this round uploads nothing.
    struct SecondWriter: Error {}

    /// Checks the prefix (`OffsiteUploader.checkBucket`): true when this server may write it;
    /// false after pausing it (`offsite-conflict`, saying why and what to do).
    func mayWrite(takeover: Bool) async throws -> Bool {
        let root = uploader.store.root
        let location = uploader.objects.prefixLocation
        let why: String
        switch try await uploader.checkBucket(takeover: takeover, now: now()) {
        case .ok:
            return true
        case .tookOver(let snapshots, let implicit):
            try SnapshotWriters.takeoverDone(root)
            logger.notice(implicit ? "this server writes the bucket prefix (empty, or holding snapshots of its own identity)"
                                   : "the bucket prefix was taken over, as `hp-server adopt` asked", metadata: ["snapshots": "\(snapshots)"])
            return true
        case .foreign(let newest, let ours): why = SnapshotWriters.foreignText(location: location, newest: newest, ours: ours, me: uploader.writerName)
        case .marked(let takenOver, let by): why = SnapshotWriters.markedText(location: location, takenOver: takenOver, by: by, me: uploader.writerName)
        case .occupied(let snapshots): why = SnapshotWriters.occupiedText(location: location, count: snapshots, me: uploader.writerName)
        }
        try SnapshotWriters.markConflict(root, why)
        logger.error("\(why)")
        return false
    }

    /// Uploads queued bundles until the queue is empty or one fails. Returns (uploaded, failed).
    public func round() async -> (Int, Int) {
        var uploaded = 0
        while !Task.isShuttingDownGracefully {
            let items: [OffsiteQueue.Pending]
            let (registry, batch) = (uploader.registry, settings.batch)
            do { items = try await OffsiteUploader.blocking { try registry.pendingUploads(limit: batch) } } catch {
                logger.error("offsite queue unreadable", metadata: ["error": "\(error)"])
                return (uploaded, 1)
            }
            if items.isEmpty { return (uploaded, 0) }
            for item in items {
                do {
                    _ = try await uploader.upload(item, now: now())
                    uploaded += 1
                } catch {
                    try? uploader.registry.markUploadFailed(chain: item.chain, sequence: item.sequence, error: "\(error)")
                    logger.warning("offsite upload failed; the bundle stays queued", metadata: [
                        "chain": "\(item.chain.prefix(16))", "sequence": "\(item.sequence)", "error": "\(error)"])
                    return (uploaded, 1)
                }
            }
        }
        return (uploaded, 0)
    }
}
