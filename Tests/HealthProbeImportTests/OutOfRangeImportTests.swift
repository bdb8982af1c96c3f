import Foundation
import GRDB
import Testing
@testable import HealthProbeArchive
@testable import HealthProbeImport
import HealthProbeCanonical
import HealthProbeSimulator
import HealthProbeTestSupport

/// Values an export may hold that no bundle carries: refused by the import (each a counted
/// rejection naming why), so the archive never holds what its server would refuse, and
/// nothing traps on the way.
@Suite("Imports of dates, offsets and category values no bundle carries")
struct OutOfRangeImportTests {
    @Test("records dated before year 0 (by their offset), before 1900 or from 2200 are rejected, each naming its line and which date, and so is such an export date (not in the notes); a workout event's such date stays as written; the export imports, and its bundle verifies")
    func datesOutsideTheArchive() throws {
        let dir = TempDir()
        let t = TempHome()
        try SyntheticExport(records: 60).writeXML(to: dir.file("a.xml"))
        var text = try String(contentsOfFile: dir.file("a.xml"), encoding: .utf8)
        // Three heart-rate records moved out of range: start and end dates replaced alike.
        let dates = ["0000-01-01 00:00:00 +0100", "1850-06-01 10:00:00 +0000", "2200-01-01 00:00:00 +0000"]
        var lines = text.components(separatedBy: "\n")
        var moved = 0
        for i in lines.indices where moved < dates.count && lines[i].contains("<Record type=\"HKQuantityTypeIdentifierHeartRate\"") {
            lines[i] = lines[i].replacingOccurrences(of: #"startDate="[^"]*" endDate="[^"]*""#,
                                                     with: "startDate=\"\(dates[moved])\" endDate=\"\(dates[moved])\"", options: .regularExpression)
            moved += 1
        }
        try #require(moved == 3)
        // A workout event far out of range: metadata, kept as the export wrote it.
        if let w = lines.firstIndex(where: { $0.contains("<Workout ") }) {
            lines.insert("  <WorkoutEvent type=\"HKWorkoutEventTypePause\" date=\"0000-01-01 00:00:00 +0100\"/>", at: w + 1)
        }
        // The export's own date far out of range: refused as well, and not in the import's notes.
        let exportDate = try #require(lines.firstIndex { $0.contains("<ExportDate ") })
        lines[exportDate] = " <ExportDate value=\"0000-01-01 00:00:00 +0100\"/>"
        text = lines.joined(separator: "\n")
        try text.write(toFile: dir.file("b.xml"), atomically: true, encoding: .utf8)
        let r = try importExport(t, dir.file("b.xml"))
        #expect(r.rejected == 4)
        #expect(r.rejections.contains { $0.reason.hasPrefix("value is outside") }, "\(r.rejections.map(\.reason))")
        let notes = try t.open().archive.writer.read { try String.fetchOne($0, sql: "SELECT notes FROM observations WHERE id = ?", arguments: [r.observationId]) }
        #expect(notes?.contains("\"records\"") == true && notes?.contains("export_date") == false, "\(notes ?? "no notes")")
        #expect(r.rejections.allSatisfy { $0.reason.contains("is outside 1900-01-01 to 2199-12-31 (UTC), the dates the archive holds") }, "\(r.rejections.map(\.reason))")
        #expect(r.rejections.map(\.line).allSatisfy { $0 > 0 }, "each rejection names its line")
        let node = try t.open()
        let (lines1, hash) = try bundleLines(node, r.observationId, previous: nil)
        var verifier = BundleVerifier()
        try verifier.feed(all: lines1)
        _ = try verifier.finish(expected: hash)
    }

    @Test("a capture of a sample dated outside 1900-2199 is refused with an error naming the range, and nothing of the page is stored")
    func captureOutsideTheArchive() throws {
        let t = TempHome()
        let node = try t.open()
        var old = hr(0)
        old.startDate = -2_500_000_000  // 1890
        old.endDate = old.startDate
        #expect {
            try capture(node, samples: [hr(1), old])
        } throws: { "\($0)".contains("has a date that is outside 1900-01-01 to 2199-12-31 (UTC), the dates the archive holds") }
        #expect(try Counts.of(node).samples == 0)
    }

    @Test("a category value past 2^53 is kept as text, not as a number no bundle carries; an export offset past ±18:00 is no offset")
    func categoryAndOffset() throws {
        let dir = TempDir()
        let t = TempHome()
        let xml = """
            <?xml version="1.0" encoding="UTF-8"?>
            <HealthData locale="en_US">
             <ExportDate value="2024-06-01 09:00:00 +0200"/>
             <Record type="HKCategoryTypeIdentifierSleepAnalysis" sourceName="Synthetic Watch" startDate="2024-05-01 23:00:00 +0200" endDate="2024-05-02 06:00:00 +0200" value="1152921504606846976"/>
             <Record type="HKCategoryTypeIdentifierSleepAnalysis" sourceName="Synthetic Watch" startDate="2024-05-02 23:00:00 +0200" endDate="2024-05-03 06:00:00 +0200" value="3"/>
            </HealthData>
            """
        try xml.write(toFile: dir.file("c.xml"), atomically: true, encoding: .utf8)
        let r = try importExport(t, dir.file("c.xml"))
        let node = try t.open()
        let values = try node.archive.writer.read { db in try Int?.fetchAll(db, sql: "SELECT category_value FROM sample_versions ORDER BY start_date") }
        #expect(values == [nil, 3], "2^60 is kept as text (metadata hp:value), 3 as a number")
        let (lines, hash) = try bundleLines(node, r.observationId, previous: nil)
        var verifier = BundleVerifier()
        try verifier.feed(all: lines)
        _ = try verifier.finish(expected: hash)
        #expect(ExportParser.offsetSeconds("2024-06-01 09:00:00 +0200") == 7200)
        #expect(ExportParser.offsetSeconds("2024-06-01 09:00:00 -1800") == -64_800)
        #expect(ExportParser.offsetSeconds("2024-06-01 09:00:00 +1900") == nil)
        #expect(ExportParser.offsetSeconds("2024-06-01 09:00:00 +0199") == nil)
        #expect(ExportParser.offsetSeconds("2024-06-01 09:00:00 +9999") == nil)
    }

    @Test("canonical date text never traps: before year 0, after 9999, at Int64's edges and NaN it is written as the nearest instant it holds")
    func canonicalDateIsTotal() {
        #expect(CanonicalDate.string(0) == "1970-01-01T00:00:00.000Z")
        let first = "0000-01-01T00:00:00.000Z", last = "9999-12-31T23:59:59.999Z"
        for (t, expected) in [(CanonicalDate.parse("0000-01-01T00:00:00+0100")!, first), (-1e20, first), (-.greatestFiniteMagnitude, first),
                              (1e20, last), (.greatestFiniteMagnitude, last), (CanonicalDate.parse("9999-12-31T23:59:59-0100")!, last)] {
            #expect(CanonicalDate.string(t) == expected, "\(t)")
        }
        #expect(CanonicalDate.string(.nan) == "1970-01-01T00:00:00.000Z")
        #expect(CanonicalDate.milliseconds(.infinity) == .max && CanonicalDate.milliseconds(-.infinity) == .min && CanonicalDate.milliseconds(.nan) == 0)
        #expect(CanonicalDate.string(CanonicalDate.parse(first)!) == first && CanonicalDate.string(CanonicalDate.parse(last)!) == last)
    }
}
