import Foundation
import Testing
@testable import HealthProbeArchive
import HealthProbeCanonical
import HealthProbeTestSupport

/// The one list of item kinds: its order is the document's, and a kind is read from its bytes alone.
@Suite("Bundle item kinds")
struct BundleItemKindTests {
    @Test("the kinds, in declaration order, are section 4's order table, row for row")
    func documentOrder() throws {
        let text = try String(contentsOf: BundleSpecTests.doc, encoding: .utf8)
        // Rows like "| 3 | `source` | ...".
        let rows = text.split(separator: "\n").compactMap { line -> (Int, String)? in
            let cells = line.split(separator: "|", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
            guard cells.count > 3, let n = Int(cells[1]), cells[2].hasPrefix("`"), cells[2].hasSuffix("`") else { return nil }
            return (n, String(cells[2].dropFirst().dropLast()))
        }
        #expect(rows.count == 14, "section 4's table has a row per kind")
        #expect(rows.map(\.0) == Array(1...rows.count))
        #expect(rows.map(\.1) == BundleItemKind.allCases.map(\.rawValue))
        #expect(BundleItemKind.allCases.map(\.order) == Array(0..<BundleItemKind.allCases.count))
        #expect(BundleItemKind.allCases == BundleItemKind.allCases.sorted())
    }

    @Test("a kind is read from its bytes, and nothing else is one")
    func decode() {
        for kind in BundleItemKind.allCases {
            let bytes = Array("xx\(kind.rawValue)yy".utf8)
            #expect(BundleItemKind(bytes, 2..<(bytes.count - 2)) == kind)
            #expect(Self.kind(#"{"kind":"\#(kind.rawValue)"}"#) == kind)
        }
        let other = Array("samples sample_ typeRun Sample".utf8)
        for r in [0..<7, 8..<15, 16..<23, 24..<30, 0..<0, 0..<6 as Range<Int>] {
            #expect(BundleItemKind(other, r) == (r == 0..<6 ? .sample : nil), "\(r)")
        }
        #expect(BundleItemKind([], 0..<0) == nil)
        #expect(BundleItemKind(other, 28..<40) == nil, "a range past the end is no kind")
        #expect(Self.kind(#"{"kind":"s\u0061mple"}"#) == nil, "an escaped name is not read as one")
        #expect(Self.kind(#"{"kind":7}"#) == nil)
        #expect(Self.kind(#"{"type":"sample"}"#) == nil)
    }

    /// The kind of the object `json` (nil when it does not parse or names none).
    static func kind(_ json: String) -> BundleItemKind? {
        (try? JSONParser.flat(Array(json.utf8))).flatMap { BundleItemKind($0) }
    }
}
