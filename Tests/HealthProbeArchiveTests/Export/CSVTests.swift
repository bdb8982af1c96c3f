import Testing
@testable import HealthProbeArchive
import HealthProbeTestSupport

@Suite("RFC 4180 CSV fields")
struct CSVTests {
    @Test("records split into fields, quoted or not", arguments: [
        ("a,b,c", ["a", "b", "c"]),
        ("a,b,c\r", ["a", "b", "c"]),
        ("", [""]),
        (",", ["", ""]),
        ("a,", ["a", ""]),
        ("\"x,y\",z", ["x,y", "z"]),
        ("\"say \"\"hi\"\"\",2", ["say \"hi\"", "2"]),
        ("\"\",\"\"", ["", ""]),
        ("é,Ω\u{1F600}", ["é", "Ω\u{1F600}"]),
    ] as [(String, [String])])
    func splits(line: String, fields: [String]) {
        #expect(CSV.parse(line) == fields)
    }

    @Test("misplaced or unclosed quotes are refused", arguments: ["a\"b,c", "\"open,c", "\"ab\"c,d", "a,b\""])
    func refuses(line: String) {
        #expect(CSV.parse(line) == nil)
    }

    @Test("a row written with CSV.row parses back to its fields (as a line: CR LF ends it)")
    func roundTrip() {
        let fields = ["plain", "with,comma", "with \"quote\"", "", "cr\rinside", "ünïcødé"]
        let row = CSV.row(fields)
        #expect(row.hasSuffix("\r\n"))
        #expect(CSV.parse(String(row.dropLast())) == fields)
    }
}
