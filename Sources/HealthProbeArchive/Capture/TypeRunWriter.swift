import Foundation
import GRDB
import HealthProbeCanonical

/// Writes one type run of a capture: pages of samples, deleted-object
/// evidence, then completion (full scans close what was not seen) or failure.
///
/// Every page is one transaction and is recorded in `capture_pages` with a
/// hash of its content: a retried page is recognized and changes nothing.
public final class TypeRunWriter {
    public let type: SampleTypeDescriptor
    public let kind: TypeRunKind
    let typeID: Int64
    let runID: Int64
    /// When this type was last verified before this observation (closing ranges' `last_seen_at`).
    let previousVerifiedAt: Double
    /// The type had no sample in the archive when the run began: nothing was visible
    /// before it, so a UUID is looked up only by its hash (a strict fingerprint cannot
    /// match a sample of an earlier capture) and completion has nothing to close.
    let typeWasEmpty: Bool
    /// The aggregates of what the run made visible, summed as its pages are written,
    /// while that is the type's whole visible set (its first run, nothing changed or
    /// disappeared); nil otherwise, and after a page failed. Spares completion a pass
    /// over the type.
    var visible: Aggregates.Sweep?
    /// Completion wrote the aggregates from `visible` (tests).
    private(set) var aggregatedFromPages = false
    unowned let session: CaptureSession
    var isFinished = false
    public private(set) var rejectedRecords = 0
    /// Deleted-object evidence was recorded in this run (it can close ranges of samples it saw).
    private var recordedDeletions = false
    /// The completion found by counting that the scan saw every visible sample, and
    /// skipped the closing pass (tests).
    private(set) var skippedClosingPass = false
    /// The index the next page gets when written through a `PipelinedPageWriter`.
    public var nextPageIndex = 0
    private var totals = PageResult()
    /// Every page of the run was written by this writer and counted in `totals`; a
    /// page that came back as already committed (a retry) was not, and the run's
    /// event counts are then read from the archive at completion.
    private var countedEveryPage = true

    init(session: CaptureSession, type: SampleTypeDescriptor, kind: TypeRunKind, typeID: Int64, runID: Int64, previousVerifiedAt: Double,
         typeWasEmpty: Bool, zone: (identifier: String?, offset: Int?)) {
        self.session = session
        self.type = type
        self.kind = kind
        self.typeID = typeID
        self.runID = runID
        self.previousVerifiedAt = previousVerifiedAt
        self.typeWasEmpty = typeWasEmpty
        visible = typeWasEmpty ? Aggregates.Sweep(zoneID: zone.identifier, zoneOffset: zone.offset) : nil
    }

    /// Totals over the pages written so far.
    public var totalsSoFar: PageResult { totals }

    /// A full scan of only this time window (a closed window re-read, e.g.
    /// Health Auto Export's `yesterday`): completion closes only unseen samples
    /// starting inside it. Nil: the scan covers all time.
    public var closingWindow: Range<Double>?

    /// Normalizes `samples` (outside the transaction), then writes them as page `index`.
    @discardableResult
    public func writePage(index: Int, samples: [CapturedSample]) throws -> PageResult {
        var normalized: [NormalizedSample] = []
        normalized.reserveCapacity(samples.count)
        for s in samples { normalized.append(try session.normalizer.normalize(s, typeIdentifier: type.identifier)) }
        return try writePage(index: index, normalized: normalized)
    }

    /// Writes already-normalized samples as page `index`.
    @discardableResult
    public func writePage(index: Int, normalized: [NormalizedSample]) throws -> PageResult {
        try ensureOpen()
        var hasher = SHA256Stream(domain: .page)
        Self.hashPage(normalized, into: &hasher)
        let pageHash = hasher.finalize()
        let saved = session.caches
        do {
            let result = try session.archive.writer.write { db -> PageResult in
                if try checkLedger(db, index: index, hash: pageHash) { var r = PageResult(); r.alreadyCommitted = true; return r }
                var ops = try PageOperations(db, run: self)
                var result = PageResult()
                try ops.applyAll(normalized, into: &result)
                try finishPage(db, index: index, hash: pageHash, result: result)
                return result
            }
            add(result)
            session.caches.trim()
            return result
        } catch {
            session.caches = saved
            visible = nil
            throw error
        }
    }

    /// Feeds a page's content to its hash: per sample, the UUID hash (`-` without
    /// one), a space, the payload hash and a newline.
    static func hashPage(_ normalized: [NormalizedSample], into hasher: inout SHA256Stream) {
        // Hex written into one buffer; elements read in place (a loop over the array
        // would copy each sample's strings).
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 130) { line in
            let base = line.baseAddress!
            normalized.withUnsafeBufferPointer { samples in
                for i in samples.indices {
                    var n = 0
                    if let u = samples[i].uuidDigest { u.writeHex(to: base); n = 64 } else { base[0] = 0x2D; n = 1 }
                    base[n] = 0x20
                    samples[i].payloadDigest.writeHex(to: base + n + 1)
                    base[n + 65] = 0x0A
                    hasher.update(bufferPointer: UnsafeRawBufferPointer(start: base, count: n + 66))
                }
            }
        }
    }

    /// Records deleted-object evidence (HealthKit `HKDeletedObject`) for these UUIDs as page `index`.
    @discardableResult
    public func recordDeletedObjects(index: Int, uuids: [String]) throws -> PageResult {
        try ensureOpen()
        recordedDeletions = true
        let hashes = uuids.compactMap(SampleNormalizer.clean).map { session.node.hasher.hmac(.sampleUUID, $0.uppercased()) }
        let pageHash = ArchiveHasher.sha256(.page, Array(("deleted\n" + hashes.joined(separator: "\n")).utf8))
        let result = try session.archive.writer.write { db -> PageResult in
            if try checkLedger(db, index: index, hash: pageHash) { var r = PageResult(); r.alreadyCommitted = true; return r }
            var ops = try PageOperations(db, run: self)
            var result = PageResult()
            for h in hashes { try ops.applyDeleted(uuidHash: h, into: &result) }
            try finishPage(db, index: index, hash: pageHash, result: result)
            return result
        }
        add(result)
        return result
    }

    /// Counts records the source held but that could not be read (malformed).
    /// A full scan with rejected records closes nothing and ends `needs_review`.
    public func recordRejected(count: Int = 1) throws {
        try ensureOpen()
        rejectedRecords += count
        let run = runID
        try session.archive.writer.write { db in
            try db.execute(sql: "UPDATE observation_type_runs SET rejected_record_count = rejected_record_count + ? WHERE id = ?", arguments: [count, run])
        }
    }

    /// The page cache (KiB) a run's completion works with.
    static let completionCacheKiB = 16 * 1024

    /// Completes the run. A full scan closes the ranges of everything visible
    /// before and not seen now (`disappeared`, `full_scan_absent`), unless
    /// records were rejected. Records the verified visible count.
    @discardableResult
    public func complete(anchorAfter: [UInt8]? = nil) throws -> TypeRunResult {
        try ensureOpen()
        let obs = session.observationID
        let now = session.node.clock.now()
        let status: TypeRunStatus = rejectedRecords > 0 ? .needsReview : .completed
        let closes = kind == .fullScan && status == .completed
        // The type-wide passes below walk the type in fingerprint (time) order, which
        // needs little cache; bounded, they do not grow the page cache by tens of MB at
        // the end of an import (every type's run completes then).
        let (gone, visible) = try session.archive.writer.write { db in
            try db.withBoundedCache(kib: TypeRunWriter.completionCacheKiB) {
                skippedClosingPass = try closes && (typeWasEmpty || sawEveryVisibleSample(db))
                let (gone, goneEvents) = closes && !skippedClosingPass ? try closeUnseen(db) : (0, 0)
                // After a full scan closed what it did not see, what is visible is what it saw
                // (every sample it saw kept or got an open range), unless deleted-object
                // evidence closed some of those; otherwise the type's open ranges are counted.
                let visible = closes && !recordedDeletions && closingWindow == nil ? totals.newlySeen : try Int.fetchOne(db, sql: """
                    SELECT count(*) FROM samples s INDEXED BY \(SampleIndexes.byTypeAndFingerprint) JOIN sample_visibility_ranges r ON r.sample_id = s.id AND +r.last_observation_id IS NULL
                    WHERE s.sample_type_id = ?
                    """, arguments: [typeID]) ?? 0
                try db.execute(sql: """
                    UPDATE observation_type_runs SET status = ?, ended_at = ?, anchor_after = ?, verified_visible_count = ?,
                        deleted_event_count = deleted_event_count + ?
                    WHERE id = ?
                    """, arguments: [status.rawValue, now, anchorAfter.map { Data($0) }, visible, gone, runID])
                var changes = totals.events
                changes.disappeared += goneEvents
                // The sum of what appeared is the visible set only when nothing else moved.
                var sums = countedEveryPage && totals.changed == 0 && totals.disappeared == 0 && gone == 0 && !recordedDeletions ? self.visible : nil
                self.visible = nil
                let offered = sums != nil
                try Aggregates.update(db, observationID: obs, typeID: typeID, now: now, changes: countedEveryPage ? changes : nil, visible: &sums)
                aggregatedFromPages = offered && sums == nil
                return (gone, visible)
            }
        }
        totals.disappeared += gone
        isFinished = true
        return TypeRunResult(typeIdentifier: type.identifier, status: status, insertedEvents: totals.appeared + totals.changed,
                             deletedEvents: totals.disappeared + totals.deletedUnknown, visibleCount: visible, rejectedRecords: rejectedRecords)
    }

    /// Whether this scan saw every sample of the type that was visible before it, so
    /// that closing would find nothing: no range of the type opened or closed since its
    /// previous summary, and the samples the scan saw that were visible before (those it
    /// saw, less those that appeared) are as many as that summary counted. Samples are
    /// counted once each (a seen-set row, an appearance), so equal counts mean the same set.
    private func sawEveryVisibleSample(_ db: Database) throws -> Bool {
        guard !recordedDeletions else { return false }
        let obs = session.observationID
        guard let previous = try Aggregates.previousSummary(db, typeID: typeID, before: obs, chain: session.node.deviceChainID) else { return false }
        let pid: Int64 = previous["observation_id"], count: Int = previous["visible_record_count"]
        guard totals.newlySeen - totals.appeared == count else { return false }
        return try !Aggregates.moved(db, typeID: typeID, after: pid, upTo: obs - 1)
    }

    /// A full scan's end: every sample of the type visible until now and not
    /// seen by this run gets a `disappeared` event and its range closed.
    /// Returns how many, and how many of those events were new.
    private func closeUnseen(_ db: Database) throws -> (closed: Int, events: Int) {
        let obs = session.observationID
        try db.ensureTempTable("hp_run_gone", columns: "sample_id INTEGER PRIMARY KEY, version_id INTEGER")
        try db.execute(sql: "DELETE FROM temp.hp_run_gone")
        var arguments: StatementArguments = [typeID]
        var window = ""
        if let w = closingWindow {
            window = "AND EXISTS (SELECT 1 FROM sample_versions v WHERE v.id = r.version_id AND v.start_date >= ? AND v.start_date < ?)"
            arguments += [w.lowerBound, w.upperBound]
        }
        try db.execute(sql: """
            INSERT INTO temp.hp_run_gone(sample_id, version_id)
            SELECT r.sample_id, r.version_id
            FROM samples s INDEXED BY \(SampleIndexes.byTypeAndFingerprint) JOIN sample_visibility_ranges r ON r.sample_id = s.id AND +r.last_observation_id IS NULL
            WHERE s.sample_type_id = ?
              AND NOT EXISTS (SELECT 1 FROM \(session.seenTable) x WHERE x.sample_id = s.id)
              \(window)
            """, arguments: arguments)
        let gone = db.changesCount
        var events = 0
        if gone > 0 {
            try db.execute(sql: """
                INSERT OR IGNORE INTO sample_observation_events(observation_id, sample_id, version_id, event_kind, observed_at, evidence_kind)
                SELECT ?, sample_id, version_id, \(EventKind.disappeared.sql), ?, \(EvidenceKind.fullScanAbsent.sql) FROM temp.hp_run_gone
                """, arguments: [obs, session.observedAt])
            events = db.changesCount
            try db.execute(sql: """
                UPDATE sample_visibility_ranges SET last_observation_id = ?, last_seen_at = max(first_seen_at, ?)
                WHERE sample_id IN (SELECT sample_id FROM temp.hp_run_gone) AND +last_observation_id IS NULL
                """, arguments: [obs, previousVerifiedAt])
        }
        try db.execute(sql: "DELETE FROM temp.hp_run_gone")
        return (gone, events)
    }

    /// Ends the run as `unauthorized` or `failed`. Nothing is closed; pages
    /// already committed stay (their appearances are real evidence).
    @discardableResult
    public func fail(_ status: TypeRunStatus, errorKind: TypeRunErrorKind, message: String? = nil) throws -> TypeRunResult {
        try ensureOpen()
        guard status == .failed || status == .unauthorized else {
            throw ArchiveError(.invalidState, "a type run can fail only as failed or unauthorized, not \(status.rawValue)")
        }
        let now = session.node.clock.now()
        let messageHash = message.map { session.node.hasher.hmac(.errorMessage, $0) }
        try session.archive.writer.write { db in
            // Unauthorized means nothing was read: a run that recorded events fails as `failed`
            // (a bundle whose unauthorized run has events is refused, Protocol/bundles.md section 4.5).
            if status == .unauthorized,
               try Int.fetchOne(db, sql: "SELECT inserted_event_count + deleted_event_count FROM observation_type_runs WHERE id = ?", arguments: [runID]) ?? 0 > 0 {
                throw ArchiveError(.invalidState, "the \(type.identifier) run recorded events, so it read records: end it as failed, not unauthorized")
            }
            try db.execute(sql: "UPDATE observation_type_runs SET status = ?, ended_at = ?, error_kind = ?, error_message_hash = ? WHERE id = ?",
                           arguments: [status.rawValue, now, errorKind.rawValue, messageHash, runID])
            try Aggregates.update(db, observationID: session.observationID, typeID: typeID, now: now)
        }
        isFinished = true
        return TypeRunResult(typeIdentifier: type.identifier, status: status, insertedEvents: totals.appeared + totals.changed,
                             deletedEvents: totals.disappeared + totals.deletedUnknown, visibleCount: nil, rejectedRecords: rejectedRecords)
    }

    func ensureOpen() throws {
        if isFinished { throw ArchiveError(.invalidState, "the \(type.identifier) type run is already finished") }
    }

    func add(_ r: PageResult) {
        if r.alreadyCommitted { countedEveryPage = false }
        totals.add(r)
    }

    /// True when this page was already committed with the same content.
    private func checkLedger(_ db: Database, index: Int, hash: String) throws -> Bool {
        guard let existing = try committedPageHash(db, index: index) else { return false }
        if existing == hash { return true }
        throw ArchiveError(.pageConflict, "page \(index) of the \(type.identifier) run was already committed with different content; a retry must resend the same page")
    }

    /// The hash recorded for page `index` of this run, if it was committed.
    func committedPageHash(_ db: Database, index: Int) throws -> String? {
        try String.fetchOne(db, sql: "SELECT page_hash FROM capture_pages WHERE type_run_id = ? AND page_index = ?", arguments: [runID, index])
    }

    func finishPage(_ db: Database, index: Int, hash: String, result: PageResult) throws {
        try db.execute(sql: "INSERT INTO capture_pages(type_run_id, page_index, page_hash, record_count, committed_at) VALUES (?, ?, ?, ?, ?)",
                       arguments: [runID, index, hash, result.records, session.node.clock.now()])
        try db.execute(sql: "UPDATE observation_type_runs SET inserted_event_count = inserted_event_count + ?, deleted_event_count = deleted_event_count + ? WHERE id = ?",
                       arguments: [result.appeared + result.changed, result.disappeared + result.deletedUnknown, runID])
    }
}
