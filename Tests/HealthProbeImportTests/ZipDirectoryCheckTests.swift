import Foundation
import Testing
@testable import HealthProbeImport
import HealthProbeTestSupport

/// A zip whose directory names offsets or sizes outside the file is `corrupt_zip` naming
/// what, before ZIPFoundation reads it (it converts some of them unchecked and traps).
@Suite("Zip directories checked before they are read")
struct ZipDirectoryCheckTests {
    static func le(_ v: UInt64, _ n: Int) -> [UInt8] { (0..<n).map { UInt8(truncatingIfNeeded: v >> (8 * UInt64($0))) } }
    static func u32(_ b: [UInt8], _ at: Int) -> UInt64 { (0..<4).reduce(0) { $0 | UInt64(b[at + $1]) << (8 * UInt64($1)) } }

    /// A valid export.zip's bytes and where its end record starts.
    static func valid(_ dir: TempDir) throws -> (bytes: [UInt8], end: Int) {
        _ = try CraftedZip.write(to: dir.file("ok.zip"), actualBytes: 200_000, records: 50)
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: dir.file("ok.zip"))))
        let end = try #require((0...(bytes.count - 22)).reversed().first { u32(bytes, $0) == 0x0605_4B50 })
        return (bytes, end)
    }

    func refused(_ bytes: [UInt8], _ dir: TempDir, saying: String) throws {
        let path = dir.file("bad.zip")
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        #expect {
            try ExportLocation.locate(path)
        } throws: { e in
            guard let e = e as? ImportError else { return false }
            return e.code == .corruptZip && e.message.contains(saying)
        }
    }

    @Test("a valid export.zip is found as before")
    func validZip() throws {
        let dir = TempDir()
        _ = try Self.valid(dir)
        #expect(try ExportLocation.locate(dir.file("ok.zip")).kind == .zip)
    }

    @Test("a zip64 end record placing the central directory at byte 2^63 + 5 is refused, not read")
    func zip64DirectoryPastTheFile() throws {
        let dir = TempDir()
        let (bytes, end) = try Self.valid(dir)
        let directorySize = Self.u32(bytes, end + 12)
        var record = Self.le(0x0606_4B50, 4) + Self.le(44, 8) + Self.le(45, 2) + Self.le(45, 2) + Self.le(0, 4) + Self.le(0, 4)
        record += Self.le(1, 8) + Self.le(1, 8) + Self.le(directorySize, 8) + Self.le(1 << 63 + 5, 8)
        let locator = Self.le(0x0706_4B50, 4) + Self.le(0, 4) + Self.le(UInt64(end), 8) + Self.le(1, 4)
        var endRecord = Array(bytes[end...])
        for k in 0..<4 { endRecord[16 + k] = 0xFF }
        try refused(Array(bytes[..<end]) + record + locator + endRecord, dir, saying: "the central directory is said to start at byte 9223372036854775813")
    }

    @Test("2,000 seeded mutations of a valid export.zip's local header, directory and end record: each is found and read whole, or refused as an import error; none stops the process")
    func mutations() throws {
        let dir = TempDir()
        _ = try CraftedZip.write(to: dir.file("ok.zip"), actualBytes: 20_000, records: 20)
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: dir.file("ok.zip"))))
        let end = try #require((0...(bytes.count - 22)).reversed().first { Self.u32(bytes, $0) == 0x0605_4B50 })
        let directory = Int(Self.u32(bytes, end + 16))
        // Where the offsets and sizes are: the local header, the directory, the end record.
        let (read, refused) = try ZipMutations.run(bytes, in: dir, count: 2000, seed: 0x4850_5A49_5030_3031, maxChanges: 6) { next in
            [next(30), directory + next(end - directory), end + next(bytes.count - end)]
        }
        #expect(read > 0 && refused > 0, "\(read) read, \(refused) refused")
    }

    @Test("a stored member declaring more bytes than the file holds is refused, naming it")
    func storedPastTheFile() throws {
        let dir = TempDir()
        var (bytes, end) = try Self.valid(dir)
        let directory = Int(Self.u32(bytes, end + 16))
        bytes[directory + 10] = 0
        bytes[directory + 11] = 0  // stored
        for (k, b) in Self.le(0xFFFF_FFF0, 4).enumerated() { bytes[directory + 24 + k] = b }
        try refused(bytes, dir, saying: "member 1, stored, declares 4294967280 bytes")
    }

    @Test("a member the directory calls deflated but its local header stored, declaring more bytes than the file holds, is refused as stored (ZIPFoundation reads by the local header)")
    func storedByItsLocalHeader() throws {
        let dir = TempDir()
        var (bytes, end) = try Self.valid(dir)
        let directory = Int(Self.u32(bytes, end + 16))
        bytes[8] = 0
        bytes[9] = 0  // the local header: stored
        for (k, b) in Self.le(0xFFFF_FFF0, 4).enumerated() { bytes[directory + 24 + k] = b }
        try refused(bytes, dir, saying: "member 1, stored, declares 4294967280 bytes")
    }

    @Test("a member said to start past the end of the file is refused, naming it")
    func memberPastTheFile() throws {
        let dir = TempDir()
        var (bytes, end) = try Self.valid(dir)
        let directory = Int(Self.u32(bytes, end + 16))
        for (k, b) in Self.le(0x7FFF_FFF0, 4).enumerated() { bytes[directory + 42 + k] = b }
        try refused(bytes, dir, saying: "member 1's data is said to start at byte 2147483632")
    }
}
