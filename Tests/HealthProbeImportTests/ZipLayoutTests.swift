import Foundation
import Testing
@testable import HealthProbeImport
import HealthProbeSimulator
import HealthProbeTestSupport

/// The same export.zip in the layouts other zip writers use (zip64 records, as an export
/// past 4 GiB has; sizes in data descriptors, as a streaming writer leaves them) passes the
/// directory check and imports exactly as the plain one does.
@Suite("Export zips in every layout")
struct ZipLayoutTests {
    @Test("zip64 records, data descriptors and both, a zip64 field holding a value its record does not mark: each imports the same records as the plain zip",
          arguments: [RewrittenZip.Layout.zip64, .descriptor, .zip64Descriptor, .zip64ExtraValue])
    func layout(_ layout: RewrittenZip.Layout) throws {
        let dir = TempDir()
        var export = SyntheticExport(records: 600)
        export.compositeEvery = 100
        try export.writeZip(to: dir.file("plain.zip"))
        try RewrittenZip.rewrite(dir.file("plain.zip"), to: dir.file("export.zip"), layout: layout)
        #expect(try Data(contentsOf: URL(fileURLWithPath: dir.file("export.zip"))) != Data(contentsOf: URL(fileURLWithPath: dir.file("plain.zip"))))

        let plainHome = TempHome(), home = TempHome()
        let plain = try importExport(plainHome, dir.file("plain.zip"))
        let r = try importExport(home, dir.file("export.zip"))
        #expect(r.status == "completed" && plain.status == "completed")
        #expect(r.records == plain.records && r.records == 600 + 6 * 5)
        #expect(r.source.hasSuffix("apple_health_export/export.xml"))
        #expect(try Counts.of(try home.open()) == Counts.of(try plainHome.open()))
    }

    @Test("a zip64 field giving the first member's offset as 0, which ZIPFoundation reads as absent (it then finds no member), is refused saying to import the unzipped folder; that folder imports")
    func zip64OffsetZero() throws {
        let (layout, saying) = (RewrittenZip.Layout.zip64EveryField, "member 1 gives its offset in a zip64 field the zip reader used here cannot take")
        let dir = TempDir()
        try SyntheticExport(records: 100).writeZip(to: dir.file("plain.zip"))
        try RewrittenZip.rewrite(dir.file("plain.zip"), to: dir.file("export.zip"), layout: layout)
        #expect {
            try importExport(TempHome(), dir.file("export.zip"))
        } throws: { e in
            guard let e = e as? ImportError else { return false }
            return e.code == .corruptZip && e.message.contains(saying) && e.message.contains("import the apple_health_export folder instead")
        }
        try FileManager.default.createDirectory(atPath: dir.file("apple_health_export"), withIntermediateDirectories: true)
        try SyntheticExport(records: 100).writeXML(to: dir.file("apple_health_export/export.xml"))
        #expect(try importExport(TempHome(), dir.file("apple_health_export")).records == 100)
    }

    @Test("a member whose deflate stream has not ended at the file's end (a stored block longer than what follows), which ZIPFoundation's inflate would wait on forever, is refused as corrupt", .timeLimit(.minutes(1)))
    func streamThatNeverEnds() throws {
        let dir = TempDir()
        let xml = Array("<?xml version=\"1.0\"?>\n<HealthData locale=\"en_US\">\n".utf8)
        // A non-final stored block of 65,535 bytes: its first bytes are the export's head, the rest never come.
        let data: [UInt8] = [0x00, 0xFF, 0xFF, 0x00, 0x00] + xml
        for layout in [RewrittenZip.Layout.descriptor, .zip64] {
            try RewrittenZip.writeOne(to: dir.file("export.zip"), name: "apple_health_export/export.xml", data: data, crc: 0, uncompressed: 65_535, layout: layout)
            #expect {
                try importExport(TempHome(), dir.file("export.zip"))
            } throws: { e in
                guard let e = e as? ImportError else { return false }
                return e.code == .corruptZip && "\(e)".contains("deflate stream has not ended at its last byte")
            }
        }
    }

    @Test("1,000 seeded mutations of a zip64 export's headers, extra fields, zip64 records and end record: each is read whole or refused as an import error; none stops the process")
    func zip64Mutations() throws {
        let dir = TempDir()
        try SyntheticExport(records: 40).writeZip(to: dir.file("plain.zip"))
        try RewrittenZip.rewrite(dir.file("plain.zip"), to: dir.file("ok.zip"), layout: .zip64)
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: dir.file("ok.zip"))))
        let end = bytes.count - 22
        let record = end - 20 - 56
        let directory = (0..<8).reduce(0) { $0 | Int(bytes[record + 48 + $1]) << (8 * $1) }
        // The first local header and its zip64 field, the directory, the zip64 record, locator and end record.
        let (read, refused) = try ZipMutations.run(bytes, in: dir, count: 1000, seed: 0x4850_5A36_3430_3031, maxChanges: 4) { next in
            [next(70), directory + next(record - directory), record + next(bytes.count - record)]
        }
        #expect(read > 0 && refused > 0, "\(read) read, \(refused) refused")
    }
}
