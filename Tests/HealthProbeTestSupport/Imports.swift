import Foundation
import GRDB
@testable import HealthProbeArchive
import HealthProbeImport

/// Imports the export at `path` into the home a day after its last capture.
@discardableResult
public func importExport(_ t: TempHome, _ path: String, pageSize: Int = 5000, deferIndexes: Bool = true) throws -> AppleHealthImporter.Result {
    t.clock.advance(86_400)
    let node = try t.open()
    var o = AppleHealthImporter.Options()
    o.pageSize = pageSize
    o.deferIndexesOnFirstImport = deferIndexes
    return try AppleHealthImporter(node: node, options: o).importExport(at: path)
}

/// Two step records at 00:30 and 23:30 +0200: one local day (June 1), two UTC days.
public func oneLocalDayExport() throws -> (dir: TempDir, path: String) {
    try inlineExport(exportDate: "2024-06-02 09:00:00 +0200", """
     <Record type="HKQuantityTypeIdentifierStepCount" sourceName="Synthetic Phone" unit="count" startDate="2024-06-01 00:30:00 +0200" endDate="2024-06-01 00:40:00 +0200" value="100"/>
     <Record type="HKQuantityTypeIdentifierStepCount" sourceName="Synthetic Phone" unit="count" startDate="2024-06-01 23:30:00 +0200" endDate="2024-06-01 23:40:00 +0200" value="250"/>
    """)
}

/// An export.xml in a new temporary directory: the prolog, `<HealthData>` with its
/// `ExportDate`, then `body`. Keep the directory alive while the file is used.
public func inlineExport(exportDate: String, _ body: String) throws -> (dir: TempDir, path: String) {
    let dir = TempDir()
    let xml = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<HealthData locale=\"en_US\">\n <ExportDate value=\"\(exportDate)\"/>\n" + body + "\n</HealthData>\n"
    try xml.write(toFile: dir.file("export.xml"), atomically: true, encoding: .utf8)
    return (dir, dir.file("export.xml"))
}

/// Every metadata blob of the home's archive, as stored.
public func metadataJSON(_ t: TempHome) throws -> [String] {
    try t.open().archive.writer.read { db in try String.fetchAll(db, sql: "SELECT metadata_json FROM metadata_blobs") }
}
