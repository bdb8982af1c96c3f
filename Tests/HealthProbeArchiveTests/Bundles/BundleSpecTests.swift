import Foundation
import Testing
@testable import HealthProbeArchive
import HealthProbeTestSupport

/// Protocol/bundles.md says what the code checks: its member table is the schema's.
@Suite("Bundle specification")
struct BundleSpecTests {
    static let doc = vectorURL("../bundles.md")

    /// The rows between the member markers of the document.
    static func documentTable() throws -> [String] {
        let text = try String(contentsOf: doc, encoding: .utf8)
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        guard let start = lines.firstIndex(where: { $0.hasPrefix("<!-- members:") }),
              let end = lines.firstIndex(where: { $0.hasPrefix("<!-- end of members") }), start < end else { return [] }
        return Array(lines[(start + 1)..<end])
    }

    @Test("the member table of section 4.1 is the verifier's schema, row for row")
    func memberTable() throws {
        let expected = BundleItemSchema.documentRows()
        if ProcessInfo.processInfo.environment["HP_WRITE_VECTORS"] == "1" {
            var text = try String(contentsOf: Self.doc, encoding: .utf8)
            let old = try Self.documentTable().joined(separator: "\n")
            text = text.replacingOccurrences(of: old, with: expected.joined(separator: "\n"))
            try text.write(to: Self.doc, atomically: true, encoding: .utf8)
        }
        let table = try Self.documentTable()
        #expect(table == expected, "regenerate with HP_WRITE_VECTORS=1 swift test --filter BundleSpecTests")
        // Every enumeration value the schema accepts is explained in section 4.2.
        let text = try String(contentsOf: Self.doc, encoding: .utf8)
        for e in [EventKind.allCases.map(\.rawValue), EvidenceKind.allCases.map(\.rawValue), TriggerReason.allCases.map(\.rawValue),
                  TypeRunKind.allCases.map(\.rawValue), TypeRunStatus.allCases.map(\.rawValue), TypeRunErrorKind.allCases.map(\.rawValue),
                  RelationshipKind.allCases.map(\.rawValue), ObservationStatus.allCases.map(\.rawValue), ValueKind.allCases.map(\.rawValue)].joined() {
            #expect(text.contains("`\(e)`"), "section 4.2 does not name \(e)")
        }
    }
}
