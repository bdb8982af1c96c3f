import Foundation
import GRDB
import Testing
@testable import HealthProbeArchive
import HealthProbeTestSupport

/// Consolidation cannot hide loss: only records of the same source replace each other, and
/// each type has one verdict with its reasons.
@Suite("Consolidation and provenance")
struct ConsolidationProvenanceTests {
    static let day0 = 1_749_945_600.0  // a UTC midnight
    static let phone = SourceDescriptor(name: "Test Phone", bundleIdentifier: "com.example.phone", productType: "iPhone14,2", version: "17.1", operatingSystemVersion: "17.1")

    /// 288 five-minute heart-rate samples of the test watch on `day0`.
    static func raw() -> [CapturedSample] { (0..<288).map { beat(day0, $0, value: 60 + Double($0 % 7)) } }

    /// Hourly means of `raw()`, written by `source` (the watch when nil).
    static func means(source: SourceDescriptor? = nil, uuidSalt: Int = 0) -> [CapturedSample] {
        let values = raw().map { $0.numericValue! }
        return (0..<24).map { h in
            var s = hourly(day0, h, value: values[(h * 12)..<(h * 12 + 12)].reduce(0, +) / 12)
            if let source { s.source = source }
            if uuidSalt != 0 { s.uuid = String(format: "00000000-0000-4000-a%03d-%012d", uuidSalt, h) }
            return s
        }
    }

    func classify(_ node: NodeArchive, _ a: Int64, _ b: Int64) throws -> TypeClassification {
        try node.archive.writer.write { db in try ChangeClassifier.classify(db, diff: ObservationDiff.prepare(db, from: a, to: b)).types[0] }
    }

    @Test("true consolidation: the watch's 288 records become its own 24 hourly means; verdict consolidation, not loss")
    func trueConsolidation() throws {
        let node = try TempHome().open()
        let a = try captureIn(node, samples: Self.raw())
        let b = try captureIn(node, samples: Self.means())
        let c = try classify(node, a, b)
        #expect(c.verdict == .consolidation && c.consolidatedRecords == 288 && c.lostRecords == 0, "\(c.labels) \(c.reasons)")
        #expect(c.labels.contains(.consolidationLikely) && !c.labels.contains(.loss))
        #expect(c.reasons.first?.contains("same source") == true)
    }

    @Test("loss hidden behind a new source: the watch's records vanish while the phone writes fewer, longer records with the same means: loss, never consolidation")
    func lossBehindNewSource() throws {
        let node = try TempHome().open()
        let a = try captureIn(node, samples: Self.raw())
        let b = try captureIn(node, samples: Self.means(source: Self.phone, uuidSalt: 1))
        let c = try classify(node, a, b)
        #expect(c.verdict == .loss && c.lostRecords == 288 && c.lostBesideOtherSource == 288, "\(c.labels) \(c.reasons)")
        #expect(!c.labels.contains(.consolidationLikely) && c.labels.contains(.loss))
        #expect(c.reasons.joined().contains("another source"))
    }

    @Test("loss with unchanged sums: a day's records vanish while another source writes the same number with the same sum: loss")
    func lossWithUnchangedSums() throws {
        let node = try TempHome().open()
        let watch = Self.raw()
        let copy = watch.enumerated().map { i, s -> CapturedSample in
            var x = s
            x.uuid = String(format: "00000000-0000-4000-b000-%012d", i)
            x.source = Self.phone
            return x
        }
        let a = try captureIn(node, samples: watch)
        let b = try captureIn(node, samples: copy)
        let c = try classify(node, a, b)
        #expect(c.verdict == .loss && c.lostRecords == 288, "\(c.labels) \(c.reasons)")
        #expect(c.appeared.valueSum == c.disappeared.valueSum, "the day's sum is unchanged, and still it is loss")
    }

    @Test("restored history: records that disappeared come back; the restoring observation's verdict is restored, not loss or growth")
    func restoredHistory() throws {
        let node = try TempHome().open()
        let all = Self.raw()
        let a = try captureIn(node, samples: all)
        let b = try captureIn(node, samples: Array(all.dropLast(20)))
        let c = try captureIn(node, samples: all)
        let lost = try classify(node, a, b)
        #expect(lost.verdict == .loss && lost.lostRecords == 20)
        let back = try classify(node, b, c)
        #expect(back.verdict == .restored && back.restoredRecords == 20, "\(back.labels) \(back.reasons)")
        #expect(back.reasons.first?.contains("visible again") == true)
        #expect(try classify(node, a, c).verdict == .noChange)
    }
}
