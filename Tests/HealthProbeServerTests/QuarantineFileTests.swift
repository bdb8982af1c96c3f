import Foundation
import HealthProbeProtocol
import HealthProbeTestSupport
import NIOCore
import Testing
@testable import HealthProbeServer

@Suite("Quarantine file")
struct QuarantineFileTests {
    /// Writes `parts` (each deflated as a node does, given as a BUNDLE_PART frame) to a new quarantine file.
    func received(_ parts: [[UInt8]], in dir: TempDir) throws -> QuarantineFile {
        let file = try QuarantineFile(directory: dir.path)
        let compressor = BundlePartCodec.Compressor()
        var zlib: [UInt8] = []
        for (i, part) in parts.enumerated() {
            let n = try part.withUnsafeBytes { try compressor.compress($0, into: &zlib) }
            var payload = ByteBuffer()
            payload.writeInteger(UInt32(i), endianness: .big)
            payload.writeInteger(UInt32(part.count), endianness: .big)
            payload.writeBytes(zlib[0..<n])
            _ = try file.write(BundlePart(SyncFrame(kind: .bundlePart, payload: payload)))
        }
        file.finish()
        return file
    }

    @Test("the header is kept from the first part, exactly the file's first line; a long or unfinished first line is read back instead")
    func header() throws {
        let dir = TempDir()
        let head = Array(#"{"bundle_format":1,"sequence":1}"#.utf8)
        let body = Array(#"{"kind":"observation"}"#.utf8)
        let file = try received([head + [0x0A] + body.prefix(5), Array(body.dropFirst(5)) + [0x0A]], in: dir)
        #expect(file.header == head)
        var lines = try StoredBundleLines(path: file.path)
        #expect(lines.next() == head)
        #expect(lines.next() == body)
        #expect(lines.next() == nil)

        // The longest first line kept, and one byte more.
        let long = [UInt8](repeating: UInt8(ascii: "a"), count: QuarantineFile.maxHeader)
        #expect(try received([long + [0x0A] + body], in: dir).header == long)
        #expect(try received([long + [0x61, 0x0A] + body], in: dir).header == nil)
        // A first line that runs on into the second part: not taken from the second.
        #expect(try received([Array(head.prefix(10)), Array(head.dropFirst(10)) + [0x0A] + body], in: dir).header == nil)
        #expect(try received([head], in: dir).header == nil)
    }
}
