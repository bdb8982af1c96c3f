import Foundation
import GRDB
import Testing
@testable import HealthProbeArchive
@testable import HealthProbeSimulator
import HealthProbeTestSupport

/// UTC midnight `days` days before the test clock's start (1,750,000,000).
func utcMidnight(daysBeforeClock days: Int) -> Double {
    1_750_000_000.0 - 1_750_000_000.0.truncatingRemainder(dividingBy: 86_400) - Double(days) * 86_400
}

/// The hourly mean of those samples, as iOS consolidation writes it.
func hourly(_ day0: Double, _ h: Int, value: Double) -> CapturedSample {
    CapturedSample(uuid: String(format: "00000000-0000-4000-9000-%012d", Int(day0 / 3600) + h), startDate: day0 + Double(h) * 3600, endDate: day0 + Double(h + 1) * 3600,
                   valueKind: .quantity, numericValue: value, unit: "count/min",
                   source: SourceDescriptor(name: "Test Watch", bundleIdentifier: "com.example.watch", productType: "Watch6,1", version: "10.1", operatingSystemVersion: "10.1"))
}

@Suite("Analysis")
struct AnalysisTests {
    func aggregateRows(_ node: NodeArchive) throws -> [String] {
        try node.archive.writer.read { db in
            let s = try String.fetchAll(db, sql: """
                SELECT 's ' || observation_id || ' ' || sample_type_id || ' ' || visible_record_count || ' ' || appeared_count || ' ' || disappeared_count || ' ' ||
                       representation_changed_count || ' ' || ifnull(earliest_start_date, '-') || ' ' || ifnull(latest_end_date, '-') || ' ' ||
                       ifnull(value_sum, '-') || ' ' || ifnull(value_max, '-') || ' ' || ifnull(aggregate_hash, '-') || ' ' || ifnull(daily_base_observation_id, '-')
                FROM observation_type_summaries ORDER BY observation_id, sample_type_id
                """)
            let d = try String.fetchAll(db, sql: """
                SELECT 'd ' || observation_id || ' ' || sample_type_id || ' ' || bucket_start || ' ' || bucket_end || ' ' || visible_record_count || ' ' ||
                       ifnull(value_sum, '-') || ' ' || ifnull(value_max, '-') || ' ' || ifnull(source_revision_id, '-') || ' ' || aggregate_hash
                FROM daily_type_aggregates ORDER BY observation_id, sample_type_id, bucket_start, source_revision_id
                """)
            return s + d
        }
    }

    @Test("aggregates: a rebuild from the archive equals the incremental result over a simulated history")
    func rebuildEqualsIncremental() throws {
        let t = TempHome()
        var o = SimulatorCapture.Options()
        o.seed = 5
        o.days = 30
        o.pageSize = 500
        _ = try SimulatorCapture.run(home: t.home, options: o)
        o.days = 3
        for _ in 0..<5 { _ = try SimulatorCapture.run(home: t.home, options: o) }
        let node = try t.open()
        let incremental = try aggregateRows(node)
        #expect(incremental.count > 100)
        // Some summaries share earlier daily rows (types that did not change).
        let shared = try node.archive.writer.read { db in
            try Int.fetchOne(db, sql: "SELECT count(*) FROM observation_type_summaries WHERE daily_base_observation_id != observation_id")!
        }
        #expect(shared > 0)
        try node.archive.writer.write { db in try Aggregates.rebuildAll(db, now: 1) }
        let rebuilt = try aggregateRows(node)
        #expect(rebuilt == incremental)
        // The full computation everywhere (no deltas from previous summaries) gives the same rows and hashes.
        // The daily grouping runs with a bounded sorter; the page cache's size is restored after it.
        let cacheSize = { try node.archive.writer.write { db in try Int.fetchOne(db, sql: "PRAGMA main.cache_size")! } }
        let before = try cacheSize()
        #expect(before < -Aggregates.sorterKiB)
        try node.archive.writer.write { db in try Aggregates.rebuildAll(db, now: 1, allowDelta: false) }
        #expect(try aggregateRows(node) == incremental)
        #expect(try cacheSize() == before)
    }

    @Test("aggregates from the previous summary equal the full computation: appended, closed inside, closed at an extreme")
    func deltaEqualsFull() throws {
        let t = TempHome()
        let node = try t.open()
        let day0 = utcMidnight(daysBeforeClock: 5)
        let base = (0..<40).map { beat(day0, $0 * 6, value: 60 + Double($0 % 7)) }
        _ = try captureIn(node, zone: "Europe/Berlin", samples: base)
        // Appended later samples (a new day too): opened ranges only.
        let more = base + (40..<55).map { beat(day0, $0 * 6, value: 61 + Double($0 % 5)) }
        _ = try captureIn(node, zone: "Europe/Berlin", samples: more)
        // One sample inside the set disappears (not an extreme) and one is added.
        var inner = more
        inner.remove(at: 20)
        inner.append(beat(day0, 60 * 6, value: 62))
        _ = try captureIn(node, zone: "Europe/Berlin", samples: inner)
        // The earliest sample disappears: the delta cannot know the new earliest, the full pass runs.
        _ = try captureIn(node, zone: "Europe/Berlin", samples: Array(inner.dropFirst()))
        let incremental = try aggregateRows(node)
        try node.archive.writer.write { db in try Aggregates.rebuildAll(db, now: 1, allowDelta: false) }
        let full = try aggregateRows(node)
        #expect(full == incremental)
        #expect(incremental.filter { $0.hasPrefix("d ") }.count > 4)
    }

    @Test("a type's first run sums its aggregates as pages are written: equal to the full computation; not used after a change, a missing value, a failed page or a new time zone")
    func aggregatesFromPages() throws {
        let t = TempHome()
        let node = try t.open()
        let day0 = utcMidnight(daysBeforeClock: 9)
        let newer = SourceDescriptor(name: "Test Watch", bundleIdentifier: "com.example.watch", productType: "Watch6,1", version: "10.2", operatingSystemVersion: "10.2")
        // Four Berlin days, two source revisions alternating, over three pages (one of them written twice).
        var samples = (0..<300).map { beat(day0, $0 * 4, value: 50 + Double($0 % 13) + 0.25) }
        for i in stride(from: 0, to: 300, by: 3) { samples[i].source = newer }
        func run(_ type: SampleTypeDescriptor, zone: String?, offsetAfterPages: Int? = nil, _ body: (TypeRunWriter) throws -> Void) throws -> (Bool, Int64) {
            t.clock.advance(3600)
            let session = try CaptureSession.begin(node, context: ObservationContext(triggerReason: .manual, timeZoneIdentifier: zone, selectedTypes: [type.identifier]))
            let r = try session.beginTypeRun(type, kind: .fullScan)
            try body(r)
            if let offsetAfterPages { try session.updateContext(timeZoneSecondsFromGMT: offsetAfterPages, notes: nil) }
            try r.complete()
            try session.finish()
            return (r.aggregatedFromPages, session.observationID)
        }
        func pages(_ r: TypeRunWriter, _ s: [CapturedSample]) throws {
            try r.writePage(index: 0, samples: Array(s[0..<100]))
            try r.writePage(index: 1, samples: Array(s[100..<200]))
            try r.writePage(index: 2, samples: Array(s[200...]))
        }
        var used = try run(heartRate, zone: "Europe/Berlin") { try pages($0, samples) }
        #expect(used.0)
        // Not the first run of the type: counted from the archive.
        used = try run(heartRate, zone: "Europe/Berlin") { try pages($0, samples.map { var s = $0; s.numericValue! += 1; return s }) }
        #expect(!used.0)
        // A sample without a value (another type, so this is its first run).
        let steps = SampleTypeDescriptor("HKQuantityTypeIdentifierStepCount", category: .quantity)
        var noValue = samples.map { var s = $0; s.uuid = s.uuid.map { "1" + $0.dropFirst() }; return s }
        noValue[150].numericValue = nil
        used = try run(steps, zone: "Europe/Berlin") { try pages($0, noValue) }
        #expect(!used.0)
        // A page refused before it is written (a non-finite value) changes nothing: the sums stay in use.
        let energy = SampleTypeDescriptor("HKQuantityTypeIdentifierActiveEnergyBurned", category: .quantity)
        let third = samples.map { var s = $0; s.uuid = s.uuid.map { "2" + $0.dropFirst() }; return s }
        used = try run(energy, zone: nil) { r in
            try r.writePage(index: 0, samples: Array(third[0..<100]))
            var bad = Array(third[100..<200])
            bad[50].numericValue = .infinity
            #expect(throws: ArchiveError.self) { try r.writePage(index: 1, samples: bad) }
            try r.writePage(index: 1, samples: Array(third[100...]))
        }
        #expect(used.0)
        // A page that fails half-way through its transaction (the 51st sample cannot be
        // stored): rolled back whole, and the sums of its first 50 are not used.
        let basal = SampleTypeDescriptor("HKQuantityTypeIdentifierBasalEnergyBurned", category: .quantity)
        let sixth = samples.map { var s = $0; s.uuid = s.uuid.map { "5" + $0.dropFirst() }; return s }
        used = try run(basal, zone: "Europe/Berlin") { r in
            try r.writePage(index: 0, samples: Array(sixth[0..<100]))
            let normalizer = SampleNormalizer(hasher: node.hasher)
            var bad = try sixth[100..<200].map { try normalizer.normalize($0, typeIdentifier: basal.identifier) }
            bad[50].semantic = .fingerprint("not a hash")
            #expect(throws: (any Error).self) { try r.writePage(index: 1, normalized: bad) }
            try r.writePage(index: 1, samples: Array(sixth[100...]))
        }
        #expect(!used.0)
        // The observation's UTC offset set after the pages: the days differ, counted from the archive.
        let distance = SampleTypeDescriptor("HKQuantityTypeIdentifierDistanceWalkingRunning", category: .quantity)
        let fourth = samples.map { var s = $0; s.uuid = s.uuid.map { "3" + $0.dropFirst() }; return s }
        used = try run(distance, zone: nil, offsetAfterPages: 7 * 3600) { try pages($0, fourth) }
        #expect(!used.0)
        // And with the offset known from the start: from the pages.
        let flights = SampleTypeDescriptor("HKQuantityTypeIdentifierFlightsClimbed", category: .quantity)
        let fifth = samples.map { var s = $0; s.uuid = s.uuid.map { "4" + $0.dropFirst() }; return s }
        used = try run(flights, zone: "Asia/Tokyo") { try pages($0, fifth) }
        #expect(used.0)
        let incremental = try aggregateRows(node)
        #expect(incremental.filter { $0.hasPrefix("d \(used.1) ") }.count >= 8)
        try node.archive.writer.write { db in try Aggregates.rebuildAll(db, now: 1, allowDelta: false) }
        #expect(try aggregateRows(node) == incremental)
    }

    @Test("a capture's summaries count the events its runs inserted: one UUID three times with new values in a run, deleted objects, absences, a page sent twice")
    func runCountsEqualCountedEvents() throws {
        let t = TempHome()
        let node = try t.open()
        // The first run of an empty type (lookups by UUID only, no closing pass), with a UUID repeated.
        let first = (0..<10).map { hr($0) } + [hr(3, value: 70)]
        try capture(node, samples: first)
        t.clock.advance(3600)
        // Sample 0 with three new values (one changed event at most per observation), 6-9 absent,
        // 2 deleted, 10 new, and the same page given again.
        let session = try CaptureSession.begin(node, context: ObservationContext(triggerReason: .manual, selectedTypes: [heartRate.identifier]))
        let run = try session.beginTypeRun(heartRate, kind: .fullScan)
        let page = [hr(0, value: 61), hr(0, value: 62), hr(0, value: 63)] + (1..<6).map { hr($0) } + [hr(10)]
        #expect(try run.writePage(index: 0, samples: page).alreadyCommitted == false)
        try run.recordDeletedObjects(index: 1, uuids: [String(format: "00000000-0000-4000-8000-%012d", 2)])
        try run.complete()
        try session.finish()
        let o2 = session.observationID
        // Every count is the events' own: sample 0's second and third new values find its changed
        // event already recorded; sample 3 is back at its first value (changed); 2 and 6-9 disappear.
        let e2 = try events(node, observation: o2)
        #expect(e2 == ["appeared": 1, "representation_changed": 2, "disappeared": 5])
        t.clock.advance(3600)
        // A page given twice: the retry changes nothing, and the counts are then read from the archive.
        let again = try CaptureSession.begin(node, context: ObservationContext(triggerReason: .manual, selectedTypes: [heartRate.identifier]))
        let retried = try again.beginTypeRun(heartRate, kind: .fullScan)
        let third = (0..<4).map { hr($0, value: 65) }
        try retried.writePage(index: 0, samples: third)
        #expect(try retried.writePage(index: 0, samples: third).alreadyCommitted)
        try retried.complete()
        try again.finish()
        let incremental = try aggregateRows(node)
        #expect(incremental.contains { $0.hasPrefix("s \(o2) ") && $0.contains(" 1 5 2 ") })
        try node.archive.writer.write { db in try Aggregates.rebuildAll(db, now: 1, allowDelta: false) }
        #expect(try aggregateRows(node) == incremental)
        try node.archive.writer.write { db in try Aggregates.rebuildAll(db, now: 1) }
        #expect(try aggregateRows(node) == incremental)
    }

    @Test("aggregates by delta: the maximum's sample gone (one day recomputed), most days edited (one daily pass); both equal the full computation")
    func deltaWithoutTheMaximum() throws {
        let t = TempHome()
        let node = try t.open()
        let day0 = utcMidnight(daysBeforeClock: 12)
        // Ten days, a sample every 30 minutes; one sample holds the maximum.
        var base = (0..<480).map { beat(day0, $0 * 6, value: 60 + Double($0 % 7)) }
        base[250] = beat(day0, 250 * 6, value: 100)
        let typeID = { try node.archive.writer.read { db in try Int64.fetchOne(db, sql: "SELECT id FROM sample_types WHERE type_identifier = ?", arguments: [heartRate.identifier])! } }
        func path(_ obs: Int64) throws -> Aggregates.Path {
            let type = try typeID()
            return try node.archive.writer.write { db in try Aggregates.update(db, observationID: obs, typeID: type, now: 1) }
        }
        _ = try captureIn(node, zone: "Europe/Berlin", samples: base)
        // The maximum's sample disappears: the delta reads the new maximum from the daily rows.
        var without = base
        without.remove(at: 250)
        let o2 = try captureIn(node, zone: "Europe/Berlin", samples: without)
        #expect(try path(o2) == .delta)
        let top = try node.archive.writer.read { db in try Double.fetchOne(db, sql: "SELECT value_max FROM observation_type_summaries WHERE observation_id = ?", arguments: [o2]) }
        #expect(top == 66)
        // Six of ten days edited: one pass over the type writes the daily rows.
        let edited = without.enumerated().map { i, s in
            var s = s
            if i < 288 { s.numericValue = (s.numericValue ?? 0) + 1 }
            return s
        }
        let o3 = try captureIn(node, zone: "Europe/Berlin", samples: edited)
        #expect(try path(o3) == .delta)
        let incremental = try aggregateRows(node)
        try node.archive.writer.write { db in try Aggregates.rebuildAll(db, now: 1, allowDelta: false) }
        #expect(try aggregateRows(node) == incremental)
        // Ten UTC days are eleven local days in Berlin.
        #expect(incremental.filter { $0.hasPrefix("d \(o3) ") }.count == 11)
    }

    @Test("aggregates by delta: days where ranges only opened add them to the previous rows (per source revision, a new revision, a new day, a row without values); equal to the full computation")
    func deltaMergesOpenedRanges() throws {
        let t = TempHome()
        let node = try t.open()
        let day0 = utcMidnight(daysBeforeClock: 8)
        // `i`: 5-minute slot from day0; `version`: the source's version (its own source revision).
        func s(_ i: Int, _ value: Double?, version: String = "10.1") -> CapturedSample {
            var b = beat(day0, i, value: 0)
            b.numericValue = value
            b.source = SourceDescriptor(name: "Test Watch", bundleIdentifier: "com.example.watch", productType: "Watch6,1", version: version, operatingSystemVersion: version)
            return b
        }
        // Three days: revision 10.1 every day, 10.2 on day 1, 10.3 without values on day 2.
        var first = (0..<60).map { s($0 * 12, 60 + Double($0 % 9)) }
        first += (0..<5).map { s(288 + 7 + $0 * 12, 70.5 + Double($0), version: "10.2") }
        first += (0..<4).map { s(576 + 9 + $0 * 12, nil, version: "10.3") }
        let typeID = { try node.archive.writer.read { db in try Int64.fetchOne(db, sql: "SELECT id FROM sample_types WHERE type_identifier = ?", arguments: [heartRate.identifier])! } }
        func path(_ obs: Int64) throws -> Aggregates.Path {
            let type = try typeID()
            return try node.archive.writer.write { db in try Aggregates.update(db, observationID: obs, typeID: type, now: 1) }
        }
        _ = try captureIn(node, zone: "UTC", samples: first)
        // Opened only: into day 0's 10.1 row, day 1's 10.2 row, a new revision (10.4) on day 1,
        // day 2's row without values (recomputed), and a new day (day 5) with a new maximum.
        let more = first + [s(1, 61.25), s(288 + 2, 99.5, version: "10.2"), s(288 + 3, 64, version: "10.4"),
                            s(576 + 1, 66, version: "10.3"), s(5 * 288 + 4, 120)]
        let o2 = try captureIn(node, zone: "UTC", samples: more)
        #expect(try path(o2) == .delta)
        // Opened again on one day only: every other day's rows are copied.
        let o3 = try captureIn(node, zone: "UTC", samples: more + [s(288 + 40, 58)])
        #expect(try path(o3) == .delta)
        let incremental = try aggregateRows(node)
        try node.archive.writer.write { db in try Aggregates.rebuildAll(db, now: 1, allowDelta: false) }
        #expect(try aggregateRows(node) == incremental)
        // Day 0 (10.1), day 1 (10.1, 10.2, 10.4), day 2 (10.1, 10.3), day 5 (10.1).
        #expect(incremental.filter { $0.hasPrefix("d \(o3) ") }.count == 7)
        let sums = try node.archive.writer.read { db in
            try Row.fetchAll(db, sql: "SELECT visible_record_count, value_sum, value_max FROM observation_type_summaries ORDER BY observation_id")
        }
        #expect(sums.map { $0[0] as Int } == [69, 74, 75])
        #expect(sums.map { $0[2] as Double } == [74.5, 120, 120])
    }

    @Test("aggregates: a type's first summary is one sweep when every sample has a value in one unit, else the SQL passes; both equal the full computation")
    func firstSummaryBySweep() throws {
        let t = TempHome()
        let node = try t.open()
        let day0 = utcMidnight(daysBeforeClock: 6)
        // Three Berlin days, two source revisions.
        var samples = (0..<200).map { beat(day0, $0 * 4, value: 55 + Double($0 % 11) + 0.125) }
        for i in stride(from: 0, to: 200, by: 7) { samples[i].source = SourceDescriptor(name: "Test Watch", bundleIdentifier: "com.example.watch", productType: "Watch6,1", version: "10.2", operatingSystemVersion: "10.2") }
        let o1 = try captureIn(node, zone: "Europe/Berlin", samples: samples)
        let type = try node.archive.writer.read { db in try Int64.fetchOne(db, sql: "SELECT id FROM sample_types WHERE type_identifier = ?", arguments: [heartRate.identifier])! }
        let swept = try aggregateRows(node)
        #expect(swept.filter { $0.hasPrefix("d \(o1) ") }.count >= 6)
        try node.archive.writer.write { db in
            try db.execute(sql: "DELETE FROM daily_type_aggregates; DELETE FROM observation_type_summaries")
            #expect(try Aggregates.updateBySweep(db, obs: o1, typeID: type, typeIdentifier: heartRate.identifier, zoneID: "Europe/Berlin", zoneOffset: nil, now: 1))
            try db.execute(sql: "DELETE FROM daily_type_aggregates; DELETE FROM observation_type_summaries")
            // One sample without a value: the sweep declines and writes nothing.
            try db.execute(sql: "UPDATE sample_versions SET numeric_value = NULL WHERE id = (SELECT max(id) FROM sample_versions)")
            #expect(try Aggregates.updateBySweep(db, obs: o1, typeID: type, typeIdentifier: heartRate.identifier, zoneID: "Europe/Berlin", zoneOffset: nil, now: 1) == false)
            #expect(try Int.fetchOne(db, sql: "SELECT (SELECT count(*) FROM daily_type_aggregates) + (SELECT count(*) FROM observation_type_summaries)") == 0)
            try db.execute(sql: "UPDATE sample_versions SET numeric_value = 60 WHERE numeric_value IS NULL")
        }
        let value = try node.archive.writer.read { db in try Double.fetchOne(db, sql: "SELECT numeric_value FROM sample_versions WHERE id = (SELECT max(id) FROM sample_versions)") }
        #expect(value == 60)
        // The SQL passes over the same samples give the same rows and hashes as the sweep.
        try node.archive.writer.write { db in try Aggregates.rebuildAll(db, now: 1, allowDelta: false) }
        let original = samples.last!.numericValue!
        #expect(original != 60, "the last sample's value changed, so compare the sweep again on the edited data")
        try node.archive.writer.write { db in
            try db.execute(sql: "DELETE FROM daily_type_aggregates; DELETE FROM observation_type_summaries")
            try Aggregates.update(db, observationID: o1, now: 1)
        }
        let sweptAgain = try aggregateRows(node)
        try node.archive.writer.write { db in try Aggregates.rebuildAll(db, now: 1, allowDelta: false) }
        #expect(try aggregateRows(node) == sweptAgain)
        #expect(swept != sweptAgain)
    }

    @Test("aggregates: an unchanged type copies no daily rows; a changed one gets its own")
    func differential() throws {
        let t = TempHome()
        let node = try t.open()
        let day0 = utcMidnight(daysBeforeClock: 5)
        let samples = (0..<20).map { beat(day0, $0 * 20, value: 60 + Double($0)) }
        let a = try captureIn(node, zone: "UTC", samples: samples)
        let b = try captureIn(node, zone: "UTC", samples: samples)
        let c = try captureIn(node, zone: "UTC", samples: Array(samples.dropLast()))
        try node.archive.writer.read { db in
            #expect(try Int.fetchOne(db, sql: "SELECT count(*) FROM daily_type_aggregates WHERE observation_id = ?", arguments: [b]) == 0)
            #expect(try Int64.fetchOne(db, sql: "SELECT daily_base_observation_id FROM observation_type_summaries WHERE observation_id = ?", arguments: [b]) == a)
            #expect(try Int.fetchOne(db, sql: "SELECT count(*) FROM daily_type_aggregates WHERE observation_id = ?", arguments: [c])! > 0)
            let sums = try Double.fetchAll(db, sql: "SELECT value_sum FROM observation_type_summaries ORDER BY observation_id")
            #expect(sums == [1390, 1390, 1311])
            let daily = try AggregateQueries.daily(db, at: b, typeIdentifier: heartRate.identifier)
            #expect(daily.map(\.visibleRecordCount).reduce(0, +) == 20)
        }
    }

    @Test("aggregates: local days of the observation's timezone; a DST day has 23 hours")
    func dstBuckets() throws {
        let t = TempHome()
        let node = try t.open()
        // 2025-03-30 is 23 hours long in Europe/Berlin (CET to CEST).
        let berlinMidnight = 1_743_289_200.0  // 2025-03-29T23:00:00Z
        let samples = (0..<10).map { beat(berlinMidnight - 86_400, $0 * 60, value: 70) }
        let obs = try captureIn(node, zone: "Europe/Berlin", samples: samples)
        try node.archive.writer.read { db in
            let rows = try AggregateQueries.daily(db, at: obs, typeIdentifier: heartRate.identifier)
            #expect(rows.map(\.visibleRecordCount).reduce(0, +) == 10)
            let dst = rows.first { $0.bucketStart == berlinMidnight }
            #expect(dst?.bucketEnd == berlinMidnight + 23 * 3600)
            let before = rows.first { $0.bucketEnd == berlinMidnight }
            #expect(before.map { $0.bucketEnd - $0.bucketStart } == 86_400)
        }
    }

    @Test("point in time: pages with a keyset cursor equal the full stream and the state of that observation")
    func pointInTime() throws {
        let t = TempHome()
        let node = try t.open()
        let first = (0..<40).map { hr($0, value: 60) }
        let a = try capture(node, samples: first).obs
        var second = Array(first.dropFirst(5))
        second[0].numericValue = 99
        second += (100..<110).map { hr($0) }
        let b = try capture(node, samples: second).obs
        try node.archive.writer.read { db in
            for (obs, expected) in [(a, 40), (b, 45)] {
                let scope = SnapshotScope(observationID: obs, typeIdentifier: heartRate.identifier)
                var streamed: [VisibleSample] = []
                try PointInTime.stream(db, scope) { streamed.append($0) }
                #expect(streamed.count == expected)
                #expect(try PointInTime.count(db, scope) == expected)
                var paged: [VisibleSample] = []
                var cursor: PointInTime.Cursor?
                repeat {
                    let page = try PointInTime.page(db, scope, after: cursor, limit: 7)
                    #expect(page.rows.count <= 7)
                    paged += page.rows
                    cursor = page.next
                    if let c = cursor { #expect(PointInTime.Cursor(token: c.token) == c) }
                } while cursor != nil
                #expect(paged == streamed)
                #expect(streamed.map(\.strictFingerprint) == streamed.map(\.strictFingerprint).sorted())
            }
            let atA = try PointInTime.page(db, SnapshotScope(observationID: a), limit: 1000).rows
            #expect(Set(atA.map(\.numericValue)) == [60])
            let atB = try PointInTime.page(db, SnapshotScope(observationID: b), limit: 1000).rows
            #expect(atB.filter { $0.numericValue == 99 }.count == 1)
            // A window of start dates.
            let window = SnapshotScope(observationID: a, from: 1_700_000_000 + 10 * 300, to: 1_700_000_000 + 20 * 300)
            #expect(try PointInTime.count(db, window) == 10)
        }
        #expect(throws: ArchiveError.self) { try node.archive.writer.read { db in _ = try PointInTime.page(db, SnapshotScope(observationID: 999)) } }
    }

    @Test("diff: adjacent or not, either direction, with before and after versions; cost follows changes")
    func diff() throws {
        let t = TempHome()
        let node = try t.open()
        let first = (0..<30).map { hr($0, value: 60) }
        let a = try capture(node, samples: first).obs
        var second = Array(first.dropFirst(3))   // 0,1,2 disappear
        second[0].numericValue = 75              // 3 changes
        let b = try capture(node, samples: second + [hr(50)]).obs   // 50 appears
        let c = try capture(node, samples: second + [hr(50), hr(51)] + [hr(0, value: 60)]).obs   // 51 appears, 0 comes back unchanged
        try node.archive.writer.write { db in
            let ab = try ObservationDiff.prepare(db, from: a, to: b)
            #expect(try ab.counts(db) == [DiffTypeCount(typeIdentifier: heartRate.identifier, appeared: 1, disappeared: 3, changed: 1)])
            let ac = try ObservationDiff.prepare(db, from: a, to: c)
            #expect(try ac.counts(db) == [DiffTypeCount(typeIdentifier: heartRate.identifier, appeared: 2, disappeared: 2, changed: 1)])
            let changed = try ac.page(db, kind: .changed)
            #expect(changed.count == 1)
            #expect(changed.first?.before?.numericValue == 60 && changed.first?.after?.numericValue == 75)
            let ca = try ObservationDiff.prepare(db, from: c, to: a)
            #expect(try ca.counts(db) == [DiffTypeCount(typeIdentifier: heartRate.identifier, appeared: 2, disappeared: 2, changed: 1)])
            let back = try ca.page(db, kind: .changed)
            #expect(back.first?.before?.numericValue == 75 && back.first?.after?.numericValue == 60)
            // Paging by sample id.
            var seen: [Int64] = []
            var after: Int64 = 0
            while true {
                let p = try ac.page(db, afterSampleID: after, limit: 2)
                if p.isEmpty { break }
                seen += p.map(\.sampleID)
                after = p.last!.sampleID
            }
            #expect(seen.count == 5 && seen == seen.sorted())
        }
    }

    @Test("classification: consolidation is not loss; a real deletion is; a failed run is unavailable")
    func classification() throws {
        let t = TempHome()
        let node = try t.open()
        let day0 = 1_749_945_600.0  // a UTC midnight
        let day1 = day0 + 86_400
        let value: (Int) -> Double = { 60 + Double($0 % 7) }
        let raw0 = (0..<288).map { beat(day0, $0, value: value($0)) }
        let raw1 = (0..<288).map { beat(day1, $0, value: value($0)) }
        let a = try captureIn(node, samples: raw0 + raw1)
        // Day 0 consolidated into hourly means; day 1 untouched.
        let means = (0..<24).map { h in hourly(day0, h, value: (0..<12).map { value(h * 12 + $0) }.reduce(0, +) / 12) }
        let b = try captureIn(node, samples: means + raw1)
        // Then 20 samples of day 1 deleted with nothing in their place.
        let c = try captureIn(node, samples: means + Array(raw1.dropLast(20)))
        let d = try captureIn(node, samples: [], fail: true)
        try node.archive.writer.write { db in
            let ab = try ChangeClassifier.classify(db, diff: ObservationDiff.prepare(db, from: a, to: b)).types[0]
            #expect(ab.labels.contains(.consolidationLikely))
            #expect(!ab.labels.contains(.loss))
            #expect(ab.consolidatedRecords == 288 && ab.lostRecords == 0)
            #expect(ab.recordCountDelta == 24 - 288)
            let bc = try ChangeClassifier.classify(db, diff: ObservationDiff.prepare(db, from: b, to: c)).types[0]
            #expect(bc.labels == [.loss])
            #expect(bc.lostRecords == 20)
            let ac = try ChangeClassifier.classify(db, diff: ObservationDiff.prepare(db, from: a, to: c)).types[0]
            #expect(ac.labels.contains(.loss) && ac.labels.contains(.consolidationLikely))
            #expect(ac.lostRecords == 20 && ac.consolidatedRecords == 288)
            let cd = try ChangeClassifier.classify(db, diff: ObservationDiff.prepare(db, from: c, to: d)).types[0]
            #expect(cd.labels == [.unavailable])
        }
    }

    @Test("classification on a simulated history: consolidation after 45 days is not called loss")
    func simulatedConsolidation() throws {
        let t = TempHome()
        var o = SimulatorCapture.Options()
        o.seed = 11
        o.days = 44
        o.pageSize = 1000
        o.types = SimulatedType.all.filter { $0.identifier.hasSuffix("HeartRate") || $0.identifier.hasSuffix("ActiveEnergyBurned") }
        let first = try SimulatorCapture.run(home: t.home, options: o)
        o.days = 3
        let second = try SimulatorCapture.run(home: t.home, options: o)
        let node = try t.open()
        let report = try node.archive.writer.write { db in
            try ChangeClassifier.classify(db, diff: ObservationDiff.prepare(db, from: first.observationID, to: second.observationID))
        }
        for id in ["HKQuantityTypeIdentifierHeartRate", "HKQuantityTypeIdentifierActiveEnergyBurned"] {
            let c = try #require(report.types.first { $0.typeIdentifier == id })
            #expect(c.labels.contains(.consolidationLikely), "\(id): \(c.labels)")
            // Days 0-2 were consolidated (every original disappeared); they are not counted as lost.
            #expect(c.consolidatedRecords > c.lostRecords, "\(id): consolidated \(c.consolidatedRecords), lost \(c.lostRecords)")
        }
    }
}

@Suite("Change classification labels")
struct ClassificationLabelTests {
    let types = ["HeartRate", "StepCount", "BodyMass", "RespiratoryRate", "OxygenSaturation"].map {
        SampleTypeDescriptor("HKQuantityTypeIdentifier" + $0)
    }

    func sample(_ i: Int, uuid: Bool = false, value: Double = 60) -> CapturedSample {
        var s = hr(i, value: value, uuid: uuid)
        s.endDate = s.startDate + 60
        return s
    }

    /// One observation with a full-scan run per type.
    func observe(_ node: NodeArchive, _ perType: [String: [CapturedSample]]) throws -> Int64 {
        let session = try CaptureSession.begin(node, context: ObservationContext(triggerReason: .manual, selectedTypes: types.map(\.identifier)))
        for t in types {
            let run = try session.beginTypeRun(t, kind: .fullScan)
            if let s = perType[t.identifier], !s.isEmpty { try run.writePage(index: 0, samples: s) }
            try run.complete()
        }
        try session.finish()
        return session.observationID
    }

    @Test("historical insertion, duplication and many types shifting at once")
    func labels() throws {
        let t = TempHome()
        let node = try t.open()
        let base = (100..<150).map { sample($0) }
        var first: [String: [CapturedSample]] = [:]
        for ty in types { first[ty.identifier] = base }
        let a = try observe(node, first)
        var second = first
        // Heart rate: samples dated before everything seen so far.
        second[types[0].identifier] = base + (0..<10).map { sample($0) }
        // Steps: exact duplicates of visible samples (no UUIDs, as in exports).
        second[types[1].identifier] = base + base.prefix(20)
        // Two more types grow by 30% with new data: four types shift over 10%.
        second[types[2].identifier] = base + (200..<215).map { sample($0) }
        second[types[3].identifier] = base + (200..<215).map { sample($0) }
        let b = try observe(node, second)
        let report = try node.archive.writer.write { db in try ChangeClassifier.classify(db, diff: ObservationDiff.prepare(db, from: a, to: b)) }
        let byType = Dictionary(uniqueKeysWithValues: report.types.map { ($0.typeIdentifier, $0) })
        let heart = try #require(byType[types[0].identifier])
        #expect(heart.labels.contains(.historicalInsertion) && heart.historicalRecords == 10)
        #expect(!heart.labels.contains(.loss))
        let steps = try #require(byType[types[1].identifier])
        #expect(steps.labels.contains(.duplication), "\(steps.labels)")
        #expect(steps.duplicateRecords == 20)
        #expect(byType[types[2].identifier]?.labels.contains(.newData) == true)
        #expect(report.manyTypesShifting)
        #expect(byType[types[3].identifier]?.labels.contains(.manyTypesShifting) == true)
        #expect(byType[types[4].identifier]?.labels == [.noChange])
        #expect(heart.appeared.recordsPerHour != nil)
    }
}
