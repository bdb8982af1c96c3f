import Foundation
import Testing
@testable import HealthProbeArchive
import HealthProbeTestSupport

@Suite("Reading a file line by line")
struct FileLinesTests {
    /// The lines `FileLines` should give for `bytes`: split at newlines, the empty piece after a final newline dropped.
    static func expected(_ bytes: [UInt8]) -> [[UInt8]] {
        var lines = bytes.split(separator: 0x0A, omittingEmptySubsequences: false).map(Array.init)
        if lines.last?.isEmpty == true { lines.removeLast() }
        return lines
    }

    @Test("lines across chunk boundaries, a line longer than a chunk, empty lines, with and without a final newline")
    func chunkBoundaries() throws {
        let dir = TempDir()
        var rng = TestRandom(seed: 3)
        var bytes: [UInt8] = []
        // Lines of 0 to 700 bytes up to about 1.5 chunks, one line of 2.5 chunks, then more short lines.
        while bytes.count < FileLines.chunkSize * 3 / 2 {
            bytes += (0..<Int(rng.next() % 700)).map { _ in UInt8(0x61 + rng.next() % 26) } + [0x0A]
        }
        bytes += [0x0A, 0x0A] + [UInt8](repeating: 0x62, count: FileLines.chunkSize * 5 / 2) + [0x0A]
        for i in 0..<5000 { bytes += Array("{\"n\":\(i)}\n".utf8) }
        for final in [true, false] {
            let data = final ? bytes : bytes + Array("last line".utf8)
            let path = dir.file("lines-\(final).txt")
            try Data(data).write(to: URL(fileURLWithPath: path))
            let lines = try FileLines(path: path).map { $0 }
            #expect(lines.count == Self.expected(data).count)
            #expect(lines == Self.expected(data))
        }
        let empty = dir.file("empty.txt")
        try Data().write(to: URL(fileURLWithPath: empty))
        #expect(try FileLines(path: empty).map { $0 }.isEmpty)
        #expect(throws: ArchiveError.self) { _ = try FileLines(path: dir.file("missing.txt")) }
    }
}
