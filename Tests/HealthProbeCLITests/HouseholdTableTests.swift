import Testing
@testable import HealthProbeCLI
import HealthProbeProtocol

@Suite("The household table at the edges of what the HOUSEHOLD decode admits")
struct HouseholdTableTests {
    static let c = String(repeating: "c", count: 64), d = String(repeating: "d", count: 64)
    static let maxCount = 9_007_199_254_740_991

    /// A reply as the server would write it, decoded with every member checked: the table only ever sees such reports.
    static func decoded(_ json: String) throws -> HouseholdSummary.Report { try HouseholdSummary.fromWire(Array(json.utf8)) }

    @Test("Output.date: any Double, no trap; outside years 0000 to 9999 it says so")
    func dates() {
        #expect(Output.date(nil) == "-")
        #expect(Output.date(0) == "1970-01-01T00:00:00.000Z")
        #expect(Output.date(-5_364_662_400) == "1800-01-01T00:00:00.000Z")
        #expect(Output.date(10_413_791_999.999) == "2299-12-31T23:59:59.999Z")
        #expect(Output.date(-62_167_219_200) == "0000-01-01T00:00:00.000Z")
        for t in [1e300, -1e300, .nan, .infinity, -.infinity, .greatestFiniteMagnitude, -.greatestFiniteMagnitude, 253_402_300_800, -62_167_219_200.5, 9.3e15] {
            #expect(Output.date(t) == "out of range", "\(t)")
        }
    }

    @Test("extreme dates, counts, offsets and hostile text render; counts of a day that overflow when added say so")
    func extremes() throws {
        let row = "{\"bucketEnd\":10413791999.999,\"bucketStart\":-5364662400,\"typeIdentifier\":\"t\",\"visibleRecordCount\":\(Self.maxCount)}"
        let rows = Array(repeating: row, count: 1100).joined(separator: ",")
        let json = """
            {"chains":[{"chain":"\(Self.c)","clockOffsetSeconds":-3155760000,"daily":[\(rows)],"deviceName":"\\u001b[31mred\\u202e\\u0007",
            "lastObservationID":\(Self.maxCount),"lastObservedAt":-5364662400,"lastSyncAt":10413791999.999,"visible":{"t":\(Self.maxCount),"\\u001b[2J":1}},
            {"chain":"\(Self.d)","clockOffsetSeconds":3155760000,"daily":[{"bucketEnd":0,"bucketStart":0,"typeIdentifier":"t","visibleRecordCount":0}],"visible":{}}],
            "householdSumOfChains":{"t":\(Self.maxCount),"\\u001b[2J":1},
            "possiblySharedSources":[{"chains":["\(Self.c)","\(Self.d)"],"identicalStrictFingerprints":\(Self.maxCount),"typeIdentifier":"\\u001b]0;x\\u0007"}]}
            """
        let report = try Self.decoded(json)
        let text = HouseholdTable.render(report, type: "t\u{1B}[2J")
        #expect(!text.unicodeScalars.contains { $0.value < 0x20 && $0 != "\n" })
        #expect(!text.unicodeScalars.contains { $0 == "\u{202E}" || $0 == "\u{7F}" })
        #expect(text.contains("?[31mred??"))
        #expect(text.contains("1800-01-01T00:00:00.000Z") && text.contains("2299-12-31T23:59:59.999Z"))
        #expect(text.contains("-3155760000.0") && text.contains("+3155760000.0"))
        #expect(text.contains("more than 9223372036854775807"))
        #expect(text.contains("\(Self.maxCount) visible records of cccccccccccc have identical strict fingerprints in dddddddddddd"))
        // Every day's sum that fits is exact.
        #expect(HouseholdTable.sum([Self.maxCount, Self.maxCount, 1]) == "18014398509481983")
        #expect(HouseholdTable.sum([]) == "0")
    }

    @Test("an empty report and one with every optional member absent render")
    func sparse() throws {
        let empty = try Self.decoded("{\"chains\":[],\"householdSumOfChains\":{},\"possiblySharedSources\":[]}")
        #expect(HouseholdTable.render(empty, type: nil).hasSuffix("counts twice)"))
        #expect(HouseholdTable.render(empty, type: "t").contains("t day (UTC start)"))
        let sparse = try Self.decoded("{\"chains\":[{\"chain\":\"\(Self.c)\",\"daily\":[],\"visible\":{}}],\"householdSumOfChains\":{},\"possiblySharedSources\":[]}")
        let text = HouseholdTable.render(sparse, type: "t")
        #expect(text.contains("device") && text.contains("cccccccccccc"))
    }

    @Test("types are rows by the names people read; the identifier --type takes is named below the table")
    func typeNames() throws {
        let report = try Self.decoded("""
            {"chains":[{"chain":"\(Self.c)","daily":[],"visible":{"HKQuantityTypeIdentifierHeartRate":3}}],
            "householdSumOfChains":{"HKQuantityTypeIdentifierHeartRate":3},"possiblySharedSources":[]}
            """)
        let text = HouseholdTable.render(report, type: nil)
        let row = try #require(text.split(separator: "\n").first { $0.hasPrefix("Heart rate") })
        #expect(!row.contains("HKQuantityTypeIdentifier"), "\(row)")
        #expect(text.hasSuffix("one type's days: --type IDENTIFIER (the identifiers are in --json, e.g. HKQuantityTypeIdentifierHeartRate)"), "\(text)")
    }
}
