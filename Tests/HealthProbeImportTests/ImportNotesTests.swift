import Foundation
import Testing
@testable import HealthProbeArchive
import HealthProbeImport
import HealthProbeTestSupport

/// An import's observation notes stay within what a bundle's observation item holds, so
/// that every import can be synced.
@Suite("Import notes")
struct ImportNotesTests {
    @Test("an export of 60 types with their units and a Me element: notes within 1,024 bytes, the units left out and counted; its bundle verifies")
    func boundedNotes() throws {
        let types = (0..<60).map { "HKQuantityTypeIdentifierSyntheticMeasurement\($0)" }
        let records = types.map {
            "<Record type=\"\($0)\" sourceName=\"Synthetic Phone\" unit=\"mL/min·kg\" startDate=\"2024-06-01 08:00:00 +0000\" endDate=\"2024-06-01 08:10:00 +0000\" value=\"1\"/>"
        }
        let me = " <Me HKCharacteristicTypeIdentifierDateOfBirth=\"1990-01-01\" HKCharacteristicTypeIdentifierBiologicalSex=\"HKBiologicalSexNotSet\"/>\n"
        let (dir, path) = try inlineExport(exportDate: "2024-06-02 09:00:00 +0000", me + records.joined(separator: "\n"))
        defer { withExtendedLifetime(dir) {} }
        let t = TempHome()
        let r = try importExport(t, path)
        #expect(r.status == "completed" && r.records == 60)
        let node = try t.open()
        let notes = try node.archive.writer.read { db in try String.fetchOne(db, sql: "SELECT notes FROM observations") } ?? ""
        #expect(notes.utf8.count <= BundleItemSchema.maxText, "\(notes.utf8.count) bytes")
        #expect(notes.contains("\"display_units_omitted\":60") && notes.contains("\"records\":60"), "\(notes)")
        let file = t.root + "/b1.jsonl"
        try node.archive.writer.read { db in _ = try BundleFile.write(db, observationID: 1, previousManifestHash: nil, to: file) }
        #expect(throws: Never.self) { _ = try BundleFile.verify(file, expected: nil) }
    }
}
