import Foundation
import Testing
@testable import HealthProbeArchive
import HealthProbeTestSupport

@Suite("Pacing a file's writeback while something else writes it")
struct WritebackPacerTests {
    @Test("starts writeback every interval until stopped; nothing after stop; stopping twice is harmless; a missing file gives nil")
    func paces() throws {
        let dir = TempDir()
        let path = dir.file("data.bin")
        _ = FileManager.default.createFile(atPath: path, contents: nil)
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        defer { try? handle.close() }
        let pacer = try #require(WritebackPacer(path: path, interval: .milliseconds(5)))
        let chunk = Data(repeating: 7, count: 1 << 20)
        for _ in 0..<8 {
            try handle.write(contentsOf: chunk)
            usleep(10_000)
        }
        let deadline = Date().addingTimeInterval(5)
        while pacer.starts < 3 && Date() < deadline { usleep(5_000) }
        #expect(pacer.starts >= 3)
        pacer.stop()
        let stopped = pacer.starts
        usleep(50_000)
        #expect(pacer.starts == stopped, "no writeback started after stop")
        pacer.stop()
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)).count == 8 << 20, "the file's content is untouched")
        #expect(WritebackPacer(path: dir.file("missing")) == nil)
    }
}
