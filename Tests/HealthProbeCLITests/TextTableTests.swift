import Testing
@testable import HealthProbeCLI

@Suite("Plain-text tables")
struct TextTableTests {
    @Test("columns as wide as their widest cell; numbers right-aligned; no trailing spaces")
    func layout() {
        var t = TextTable(["type", "visible"], rightAligned: [1])
        t.add(["HKQuantityTypeIdentifierHeartRate", "7"])
        t.add(["steps", "12345"])
        let lines = t.render().split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        #expect(lines == [
            "type                               visible",
            "---------------------------------  -------",
            "HKQuantityTypeIdentifierHeartRate        7",
            "steps                                12345",
        ])
        #expect(lines.allSatisfy { $0.last != " " })
    }

    @Test("a table without rows is its header and rule")
    func empty() {
        #expect(TextTable(["a", "bb"]).render() == "a  bb\n-  --")
    }
}
