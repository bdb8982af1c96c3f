import Foundation
import Testing
import ZIPFoundation
@testable import HealthProbeArchive
@testable import HealthProbeImport
import HealthProbeTestSupport

/// Zips are bounded by the bytes they actually inflate, not by the sizes they declare:
/// zips made here whose central directory lies, and truthful ones past a limit.
@Suite("Zip inflate limits")
struct ZipInflateLimitTests {
    /// Imports `path` into `t` a day after its last capture, with `limits`.
    func importZip(_ t: TempHome, _ path: String, _ limits: ZipLimits = ZipLimits()) throws -> AppleHealthImporter.Result {
        t.clock.advance(86_400)
        var o = AppleHealthImporter.Options()
        o.zipLimits = limits
        return try AppleHealthImporter(node: try t.open(), options: o).importExport(at: path)
    }

    @Test("a central directory declaring 1 MiB for 64 MiB of deflate data: refused once 1 MiB is passed, whatever the limits; nothing is archived")
    func lyingCentralDirectory() throws {
        let dir = TempDir()
        let path = dir.file("export.zip")
        let compressed = try CraftedZip.write(to: path, actualBytes: 64 << 20, declaredBytes: 1 << 20)
        let entry = try #require(try ZIPFoundation.Archive(url: URL(fileURLWithPath: path), accessMode: .read)["apple_health_export/export.xml"])
        #expect(entry.uncompressedSize == 1 << 20, "the zip declares the lie")
        #expect(compressed < 512 << 10 && (1 << 20) / compressed < 400, "the declared sizes pass the folder's claimed-size check")
        let t = TempHome()
        #expect { _ = try importZip(t, path) } throws: { error in
            guard let e = error as? ImportError else { return false }
            return e.code == .inflateLimit && e.message.contains("more than the 1048576 bytes the zip declares") && e.message.contains("apple_health_export/export.xml")
        }
        #expect(try Counts.of(try t.open()) == Counts(), "nothing archived")
    }

    @Test("reading the lying member stops before a byte past its declared size is handed on: memory stays bounded")
    func boundedRead() throws {
        let dir = TempDir()
        let path = dir.file("export.zip")
        try CraftedZip.write(to: path, actualBytes: 64 << 20, declaredBytes: 1 << 20)
        let meter = InflateMeter(ZipLimits())
        let location = try ExportLocation.locate(path, meter: meter)
        let source = try location.open(meter: meter)
        defer { source.close() }
        var buffer = [UInt8](repeating: 0, count: 64 << 10)
        var handedOn = 0
        let before = Self.peakRSSKiB()
        #expect(throws: ImportError.self) {
            while true {
                let n = try buffer.withUnsafeMutableBufferPointer { try source.read($0.baseAddress!, $0.count) }
                if n == 0 { break }
                handedOn += n
            }
        }
        let after = Self.peakRSSKiB()
        #expect(handedOn <= 1 << 20)
        // The head the locator read (64 KiB and a chunk) plus the member up to its lie and one chunk.
        let inflatedLimit: Int = (1 << 20) + (256 << 10) + (96 << 10)  // typed: as one literal expression it took the type checker 10 s
        #expect(meter.inflated <= inflatedLimit, "inflated \(meter.inflated)")
        // Peak RSS grew by far less than the 64 MiB the member holds (other suites may run meanwhile).
        #expect(after - before < 48 << 10, "peak RSS grew by \(after - before) KiB")
    }

    /// This process's peak resident set size (VmHWM), in KiB.
    static func peakRSSKiB() -> Int {
        let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
        let line = status.split(separator: "\n").first { $0.hasPrefix("VmHWM:") } ?? ""
        return Int(line.split(whereSeparator: { $0 == " " || $0 == "\t" }).dropFirst().first ?? "") ?? 0
    }

    @Test("a truthful zip past maxInflatedBytes or maxRatio is stopped there, nothing archived; without limits the same zip imports")
    func limits() throws {
        let dir = TempDir()
        let path = dir.file("export.zip")
        let compressed = try CraftedZip.write(to: path, actualBytes: 6 << 20, records: 500)
        let t = TempHome()
        #expect { _ = try importZip(t, path, ZipLimits(maxInflatedBytes: 2 << 20)) } throws: { error in
            (error as? ImportError)?.code == .inflateLimit && "\(error)".contains("more than 2097152 bytes in all")
        }
        #expect(try Counts.of(try t.open()) == Counts())
        #expect((6 << 20) / compressed > 20)
        #expect { _ = try importZip(t, path, ZipLimits(maxRatio: 20)) } throws: { error in
            (error as? ImportError)?.code == .inflateLimit && "\(error)".contains("more than 20 times its \(compressed) compressed bytes")
        }
        #expect(try Counts.of(try t.open()) == Counts())
        let r = try importZip(t, path, ZipLimits(maxInflatedBytes: 8 << 20, maxRatio: 2000))
        #expect(r.status == "completed" && r.records == 500)
    }
}
