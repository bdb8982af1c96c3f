import Foundation
import HealthProbeArchive
import HealthProbeCanonical
@testable import HealthProbeImport
import HealthProbeIngest
import HealthProbeTestSupport
import Logging
import Testing

/// A `today` window stays open; once its local day has ended, a later push that re-reads
/// that day closes it. Local days are the phone's, by the offset its dates carry, even when
/// the node runs in another zone. Real archives through the ingest processor.
@Suite("Today windows")
struct TodayWindowTests {
    /// The phone is 8 hours west of UTC; the node runs in UTC.
    static let offset = -8 * 3600

    /// `yyyy-MM-dd HH:mm:ss -0800` of Unix seconds, as the phone writes it.
    static func phoneText(_ t: Double) -> String {
        let iso = CanonicalDate.string(t + Double(offset))
        return String(iso.prefix(10)) + " " + String(iso.dropFirst(11).prefix(8)) + " -0800"
    }

    static func body(at times: [Double]) -> [UInt8] {
        HAESynthetic.body(metrics: [HAESynthetic.metric("step_count", "count", times.map {
            "{\"qty\":100,\"date\":\"\(phoneText($0))\",\"source\":\"Synthetic Watch\"}"
        })])
    }

    @Test("a sample of a today push absent from a second today push of the same open day: nothing; absent from the next day's yesterday push: disappeared")
    func todayClosesWhenReRead() async throws {
        let dir = TempDir()
        let home = ArchiveHome(root: dir.path + "/home")
        let archives = OpenArchives()
        let processor = IngestProcessor(homes: CaptureHomes(home: home), archives: archives, logger: Logger(label: "test.today"),
                                        utcOffset: { _ in 0 })
        // The phone's local day two days ago, as UTC bounds (its midnight is 08:00 UTC).
        let now = Date().timeIntervalSince1970
        let off = Double(Self.offset)
        let day = ((now + off) / 86_400).rounded(.down) * 86_400 - off - 2 * 86_400
        let early = day + 3600, evening = day + 17 * 3600  // 01:00 and 17:00 local; 17:00 local is 01:00 UTC the next UTC day
        let first = try await processor.ingest(automation: "phone", bytes: Self.body(at: [early, evening]), period: .today,
                                               aggregation: HAEAggregation.none, now: day + 20 * 3600)
        #expect(first.recorded.appeared == 2, "\(first.recorded)")
        // Later the same local day (already the next day in UTC): the day is still open.
        let second = try await processor.ingest(automation: "phone", bytes: Self.body(at: [early]), period: .today,
                                                aggregation: HAEAggregation.none, now: day + 21 * 3600)
        #expect(second.recorded.disappeared == 0 && second.recorded.unchanged == 1, "\(second.recorded)")
        // The next local day's yesterday push re-reads the ended day without the evening sample (and
        // with one written late, so its body is not the second's, which would be a duplicate).
        let third = try await processor.ingest(automation: "phone", bytes: Self.body(at: [early, day + 2 * 3600]), period: .yesterday,
                                               aggregation: HAEAggregation.none, now: day + 86_400 + 10 * 3600)
        #expect(!third.duplicate)
        #expect(third.recorded.disappeared == 1 && third.recorded.unchanged == 1 && third.recorded.appeared == 1, "\(third.recorded)")

        // What the observations' notes say: the today window open (local midnight to the push), the yesterday one closed.
        let node = try archives.node(CaptureHomes(home: home).automation("phone"))
        var windows: [[TypeCaptureWindow]] = []
        for r in [first, second, third] { windows.append(try await node.archive.captureWindows(observation: try #require(r.recorded.observationId))) }
        #expect(windows[0].first?.window.open == day..<(day + 20 * 3600), "\(windows[0])")
        #expect(windows[0].first?.window.closed == nil)
        #expect(windows[2].first?.window.closed == day..<(day + 86_400), "\(windows[2])")
    }

    @Test("the offset a payload's dates carry: ±hhmm, ±hh:mm and Z; none for a text without one")
    func offsets() throws {
        let scan = try HAEDecoder(aggregation: "none").scan(.memory(Self.body(at: [1_750_000_000])))
        #expect(scan.utcOffsetSeconds == Self.offset)
        let plus = try HAEDecoder(aggregation: "none").scan(.memory(HAESynthetic.body(metrics: [HAESynthetic.metric("step_count", "count", [
            "{\"qty\":1,\"date\":\"2025-06-15 10:00:00 +0530\"}", "{\"qty\":1,\"date\":\"2025-06-15 09:00:00 +0100\"}",
        ])])))
        // The latest point (08:00 UTC, after 04:30 UTC) gives the phone's zone now.
        #expect(plus.utcOffsetSeconds == 3600)
        #expect(HAEDate.offsetSeconds("2025-06-15 10:00:00 +05:30") == 5 * 3600 + 1800)
        #expect(HAEDate.offsetSeconds("2025-06-15T10:00:00Z") == 0)
        #expect(HAEDate.offsetSeconds("2025-06-15 10:00:00 +1500") == nil)
    }
}
