import Foundation
import GRDB
import Testing
@testable import HealthProbeArchive
import HealthProbeCanonical
import HealthProbeTestSupport

@Suite("Capture write path")
struct WritePathTests {
    @Test("first observation of a type: every sample appears with an open range")
    func firstObservation() throws {
        let t = TempHome()
        let node = try t.open()
        let (obs, r) = try capture(node, samples: (0..<10).map { hr($0) })
        #expect(r.status == .completed)
        #expect(r.visibleCount == 10)
        #expect(try events(node, observation: obs) == ["appeared": 10])
        #expect(try Counts.of(node) == Counts(samples: 10, versions: 10, events: 10, ranges: 10, openRanges: 10))
        let status = try node.archive.writer.read { db in try String.fetchOne(db, sql: "SELECT status FROM observations WHERE id = ?", arguments: [obs]) }
        #expect(status == "completed")
    }

    @Test("a full scan that saw every visible sample skips the closing pass; one that missed any, or after an interrupted capture, closes")
    func closingPassSkippedOnlyWhenNothingIsMissing() throws {
        let t = TempHome()
        func scan(_ samples: [CapturedSample], on node: NodeArchive) throws -> (skipped: Bool, result: TypeRunResult, obs: Int64) {
            t.clock.advance(3600)
            let session = try CaptureSession.begin(node, context: ObservationContext(triggerReason: .manual, selectedTypes: [heartRate.identifier]))
            let run = try session.beginTypeRun(heartRate, kind: .fullScan)
            if !samples.isEmpty { try run.writePage(index: 0, samples: samples) }
            let r = try run.complete()
            try session.finish()
            return (run.skippedClosingPass, r, session.observationID)
        }
        let ten = (0..<10).map { hr($0) }
        do {
            let node = try t.open()
            #expect(try scan(ten, on: node).skipped)  // the type was empty: nothing was visible before
            let same = try scan(ten, on: node)
            #expect(same.skipped && same.result.visibleCount == 10 && same.result.deletedEvents == 0)
            // One missing, one new: as many seen as before, but not the same ones.
            let swapped = try scan(Array(ten.dropFirst()) + [hr(10)], on: node)
            #expect(!swapped.skipped && swapped.result.deletedEvents == 1 && swapped.result.visibleCount == 10)
            // The missing one reappears, the new one is missing.
            let back = try scan(ten, on: node)
            #expect(!back.skipped && back.result.deletedEvents == 1 && back.result.visibleCount == 10)
            #expect(try scan(ten, on: node).skipped)
            // A capture interrupted after a committed page: one more visible sample than the last summary says.
            let session = try CaptureSession.begin(node, context: ObservationContext(triggerReason: .manual))
            try session.beginTypeRun(heartRate, kind: .fullScan).writePage(index: 0, samples: [hr(20)])
        }
        let node = try t.open()  // marks it interrupted
        let after = try scan(ten, on: node)
        #expect(!after.skipped && after.result.deletedEvents == 1 && after.result.visibleCount == 10)
        #expect(try events(node, observation: after.obs) == ["disappeared": 1])
        let report = try ArchiveVerifier.run(node, mode: .full)
        #expect(report.ok, "\(report.checks.filter { $0.status == .problem })")
        // No previous summary, but an interrupted capture left a visible sample: the scan closes it.
        let u = TempHome()
        do {
            let node = try u.open()
            let session = try CaptureSession.begin(node, context: ObservationContext(triggerReason: .manual))
            try session.beginTypeRun(heartRate, kind: .fullScan).writePage(index: 0, samples: [hr(20)])
        }
        let fresh = try u.open()
        u.clock.advance(3600)
        let first = try scan(ten, on: fresh)
        #expect(!first.skipped && first.result.deletedEvents == 1 && first.result.visibleCount == 10)
        #expect(try events(fresh, observation: first.obs) == ["appeared": 10, "disappeared": 1])
    }

    @Test("an unchanged re-capture writes no sample, version, event or range rows")
    func unchangedRecapture() throws {
        let t = TempHome()
        let node = try t.open()
        let samples = (0..<50).map { hr($0) } + (50..<60).map { hr($0, uuid: false) }
        try capture(node, samples: samples)
        let before = try Counts.of(node)
        t.clock.advance(3600)
        let (obs, r) = try capture(node, samples: samples)
        #expect(try Counts.of(node) == before)
        #expect(try events(node, observation: obs).isEmpty)
        #expect(r.visibleCount == 60)
    }

    @Test("full scan: appeared, disappeared and changed, with ranges opened and closed")
    func appearedDisappearedChanged() throws {
        let t = TempHome()
        let node = try t.open()
        let (o1, _) = try capture(node, samples: (0..<10).map { hr($0) })
        t.clock.advance(3600)
        // 0 removed, 1 edited (same UUID, new value), 10 added.
        var next = (1..<10).map { hr($0) }
        next[0] = hr(1, value: 99)
        next.append(hr(10))
        let (o2, r2) = try capture(node, samples: next)
        #expect(try events(node, observation: o2) == ["appeared": 1, "disappeared": 1, "representation_changed": 1])
        #expect(r2.visibleCount == 10)
        #expect(try Counts.of(node) == Counts(samples: 11, versions: 12, events: 13, ranges: 12, openRanges: 10))
        try node.archive.writer.read { db throws in
            // Sample 0's range closed at o2 (exclusive end), last seen at o1's time.
            let r0 = try Row.fetchOne(db, sql: """
                SELECT r.first_observation_id, r.last_observation_id, r.last_seen_at FROM sample_visibility_ranges r
                JOIN samples s ON s.id = r.sample_id ORDER BY s.id LIMIT 1
                """)!
            #expect(r0["first_observation_id"] == o1)
            #expect(r0["last_observation_id"] == o2)
            let o1At = try Double.fetchOne(db, sql: "SELECT observed_at FROM observations WHERE id = ?", arguments: [o1])!
            #expect(r0["last_seen_at"] == o1At)
            // Sample 1 has two versions: the old range closed at o2, a new one open from o2.
            let ranges = try Row.fetchAll(db, sql: """
                SELECT first_observation_id, last_observation_id FROM sample_visibility_ranges WHERE sample_id = 2 ORDER BY first_observation_id
                """)
            #expect(ranges.count == 2)
            #expect(ranges[0]["last_observation_id"] == o2)
            #expect(ranges[1]["first_observation_id"] == o2)
            #expect((ranges[1]["last_observation_id"] as Int64?) == nil)
        }
    }

    @Test("without a UUID, a changed value is disappeared + appeared")
    func noUUIDChange() throws {
        let t = TempHome()
        let node = try t.open()
        try capture(node, samples: [hr(1, uuid: false)])
        t.clock.advance(60)
        let (o2, _) = try capture(node, samples: [hr(1, value: 61, uuid: false)])
        #expect(try events(node, observation: o2) == ["appeared": 1, "disappeared": 1])
        #expect(try Counts.of(node).samples == 2)
    }

    @Test("a retried page changes nothing")
    func idempotentPageRetry() throws {
        let t = TempHome()
        let node = try t.open()
        let session = try CaptureSession.begin(node, context: ObservationContext(triggerReason: .manual))
        let run = try session.beginTypeRun(heartRate, kind: .fullScan)
        // Duplicates inside the page make occurrence numbering part of what must be stable.
        let page = (0..<20).map { hr($0, uuid: false) } + [hr(3, uuid: false), hr(3, uuid: false)]
        let first = try run.writePage(index: 0, samples: page)
        let after = try Counts.of(node)
        let retry = try run.writePage(index: 0, samples: page)
        #expect(first.appeared == 22)
        #expect(retry.alreadyCommitted)
        #expect(try Counts.of(node) == after)
        // A different page under a committed index is refused, not merged.
        #expect(throws: ArchiveError.self) { try run.writePage(index: 0, samples: [hr(99)]) }
        let r = try run.complete()
        #expect(r.visibleCount == 22)
        try session.finish()
        #expect(try Counts.of(node) == after)
    }

    @Test("a page that fails mid-way rolls back whole and can be retried")
    func failedPageRollsBack() throws {
        let t = TempHome()
        let node = try t.open()
        let session = try CaptureSession.begin(node, context: ObservationContext(triggerReason: .manual))
        let run = try session.beginTypeRun(heartRate, kind: .fullScan)
        var bad = (0..<5).map { hr($0) }
        bad.append(CapturedSample(startDate: 10, endDate: 5, valueKind: .quantity, numericValue: 1))
        #expect(throws: ArchiveError.self) { try run.writePage(index: 0, samples: bad) }
        #expect(try Counts.of(node) == Counts())
        try run.writePage(index: 0, samples: Array(bad.prefix(5)))
        #expect(try Counts.of(node).samples == 5)
    }

    @Test("exact duplicates are both kept, and stay two on re-import")
    func duplicatesKept() throws {
        let t = TempHome()
        let node = try t.open()
        let dup = hr(7, uuid: false)
        try capture(node, samples: [dup, dup, hr(8, uuid: false)])
        #expect(try Counts.of(node).samples == 3)
        t.clock.advance(60)
        let (o2, r2) = try capture(node, samples: [dup, dup, hr(8, uuid: false)])
        #expect(try events(node, observation: o2).isEmpty)
        #expect(r2.visibleCount == 3)
        // One duplicate removed: exactly one disappears.
        t.clock.advance(60)
        let (o3, r3) = try capture(node, samples: [dup, hr(8, uuid: false)])
        #expect(try events(node, observation: o3) == ["disappeared": 1])
        #expect(r3.visibleCount == 2)
    }

    @Test("two UUIDs with identical content are two identities")
    func uuidDuplicates() throws {
        let t = TempHome()
        let node = try t.open()
        var a = hr(1)
        var b = hr(1)
        a.uuid = "AAAAAAAA-0000-4000-8000-000000000001"
        b.uuid = "BBBBBBBB-0000-4000-8000-000000000001"
        let (o1, _) = try capture(node, kind: .anchored, samples: [a, b])
        #expect(try events(node, observation: o1) == ["appeared": 2])
        #expect(try Counts.of(node).samples == 2)
    }

    @Test("anchored runs: deleted-object evidence closes ranges; unknown UUIDs still leave an event")
    func deletedObjects() throws {
        let t = TempHome()
        let node = try t.open()
        try capture(node, kind: .anchored, samples: (0..<5).map { hr($0) })
        t.clock.advance(60)
        let known = hr(2).uuid!
        let unknown = "FFFFFFFF-0000-4000-8000-00000000FFFF"
        let (o2, r2) = try capture(node, kind: .anchored, samples: [hr(5)], deleted: [known.lowercased(), unknown])
        #expect(try events(node, observation: o2) == ["appeared": 1, "disappeared": 1, "deleted_object": 1])
        #expect(r2.visibleCount == 5)
        try node.archive.writer.read { db throws in
            let ev = try Row.fetchOne(db, sql: "SELECT version_id, \(EvidenceKind.nameSQL("evidence_kind")) AS evidence_kind FROM sample_observation_events WHERE event_kind = \(EventKind.deletedObject.sql)")!
            #expect((ev["version_id"] as Int64?) == nil)
            #expect(ev["evidence_kind"] == "hk_deleted_object")
            let dis = try String.fetchOne(db, sql: "SELECT \(EvidenceKind.nameSQL("evidence_kind")) FROM sample_observation_events WHERE event_kind = \(EventKind.disappeared.sql)")
            #expect(dis == "hk_deleted_object")
        }
        // Anchored runs leave unreported samples alone.
        t.clock.advance(60)
        let (o3, r3) = try capture(node, kind: .anchored, samples: [])
        #expect(try events(node, observation: o3).isEmpty)
        #expect(r3.visibleCount == 5)
    }

    @Test("a failed full scan closes nothing; a scan with rejected records ends needs_review and closes nothing")
    func failedScanClosesNothing() throws {
        let t = TempHome()
        let node = try t.open()
        try capture(node, samples: (0..<10).map { hr($0) })
        t.clock.advance(60)
        let s2 = try CaptureSession.begin(node, context: ObservationContext(triggerReason: .manual))
        let run2 = try s2.beginTypeRun(heartRate, kind: .fullScan)
        try run2.writePage(index: 0, samples: (0..<3).map { hr($0) })
        try run2.fail(.failed, errorKind: .queryFailed, message: "synthetic")
        #expect(try s2.finish() == .failed)
        #expect(try Counts.of(node).openRanges == 10)

        t.clock.advance(60)
        let s3 = try CaptureSession.begin(node, context: ObservationContext(triggerReason: .manual))
        let run3 = try s3.beginTypeRun(heartRate, kind: .fullScan)
        try run3.writePage(index: 0, samples: (0..<3).map { hr($0) })
        try run3.recordRejected(count: 2)
        let r3 = try run3.complete()
        #expect(r3.status == .needsReview)
        #expect(try s3.finish() == .needsReview)
        #expect(try Counts.of(node).openRanges == 10)
        #expect(try events(node, observation: s3.observationID).isEmpty)
    }

    @Test("observation status reflects type runs")
    func overallStatus() {
        #expect(CaptureSession.overallStatus([.completed, .completed]) == .completed)
        #expect(CaptureSession.overallStatus([.completed, .unauthorized]) == .partialUnauthorized)
        #expect(CaptureSession.overallStatus([.completed, .failed, .unauthorized]) == .partialFailed)
        #expect(CaptureSession.overallStatus([.failed, .unauthorized]) == .failed)
        #expect(CaptureSession.overallStatus([.completed, .needsReview]) == .needsReview)
    }

    @Test("a capture left running by a crash is marked interrupted on next open, committed pages intact")
    func crashLeftObservation() throws {
        let t = TempHome()
        do {
            let node = try t.open()
            let session = try CaptureSession.begin(node, context: ObservationContext(triggerReason: .manual))
            let run = try session.beginTypeRun(heartRate, kind: .fullScan)
            try run.writePage(index: 0, samples: (0..<7).map { hr($0) })
            // The process "dies" here: nothing finishes the run or the observation.
        }
        let node = try t.open()
        try node.archive.writer.read { db throws in
            #expect(try String.fetchOne(db, sql: "SELECT status FROM observations") == "interrupted")
            #expect(try String.fetchOne(db, sql: "SELECT status FROM observation_type_runs") == "interrupted")
        }
        #expect(try Counts.of(node) == Counts(samples: 7, versions: 7, events: 7, ranges: 7, openRanges: 7))
    }

    @Test("metadata, sources and devices are stored once and referenced")
    func provenanceDedup() throws {
        let t = TempHome()
        let node = try t.open()
        var samples = (0..<4).map { hr($0) }
        for i in samples.indices {
            samples[i].device = DeviceDescriptor(name: "Watch", manufacturer: "Apple Inc.", model: "Watch", softwareVersion: "0.0.0")
            samples[i].metadata = ["HKMetadataKeyHeartRateMotionContext": .int(1)]
        }
        try capture(node, samples: samples)
        try node.archive.writer.read { db throws in
            #expect(try Int.fetchOne(db, sql: "SELECT count(*) FROM sources") == 1)
            #expect(try Int.fetchOne(db, sql: "SELECT count(*) FROM source_revisions") == 1)
            #expect(try Int.fetchOne(db, sql: "SELECT count(*) FROM hk_devices") == 1)
            #expect(try Int.fetchOne(db, sql: "SELECT count(*) FROM metadata_blobs") == 1)
            #expect(try String.fetchOne(db, sql: "SELECT software_version FROM hk_devices") == nil)
            #expect(try String.fetchOne(db, sql: "SELECT metadata_json FROM metadata_blobs") == #"{"HKMetadataKeyHeartRateMotionContext":1}"#)
            // Source names are HMAC'd, never stored raw.
            let nameHash = try String.fetchOne(db, sql: "SELECT source_name_hash FROM sources")!
            #expect(nameHash.count == 64 && nameHash != "Test Watch")
        }
    }

    @Test("the payload hash is computed from the stored (normalized) values")
    func payloadFromStoredValues() throws {
        let t = TempHome()
        let node = try t.open()
        var s = hr(1)
        s.startDate += 0.0004  // sub-millisecond noise normalizes away
        s.source?.operatingSystemVersion = "0.0.0"
        try capture(node, samples: [s])
        try node.archive.writer.read { db throws in
            let row = try Row.fetchOne(db, sql: "SELECT v.start_date, lower(hex(v.payload_hash)) AS payload_hash, r.operating_system_version FROM sample_versions v JOIN source_revisions r ON r.id = v.source_revision_id")!
            #expect(row["start_date"] == CanonicalDate.normalize(s.startDate))
            #expect((row["operating_system_version"] as String?) == nil)
            var clean = hr(1)
            clean.source?.operatingSystemVersion = nil
            let n = try SampleNormalizer(hasher: node.hasher).normalize(clean, typeIdentifier: heartRate.identifier)
            #expect(row["payload_hash"] == n.payloadHash)
        }
    }
}
