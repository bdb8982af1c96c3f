import Foundation
import Testing
@testable import HealthProbeImport
import HealthProbeTestSupport

/// Seeded mutations of a valid zip's bytes, each found and read as an import reads it.
enum ZipMutations {
    /// Writes `count` mutations of `bytes` (1 to `maxChanges` bytes each, at the offsets
    /// `region` picks from its three regions, with `next(n)` giving 0..<n) and reads each whole:
    /// each is read, or refused as an import error; anything else is recorded as an issue.
    /// SplitMix64 from `seed`: a failure is reproducible.
    static func run(_ bytes: [UInt8], in dir: TempDir, count: Int, seed: UInt64, maxChanges: Int,
                    regions: (_ next: (Int) -> Int) -> [Int]) throws -> (read: Int, refused: Int) {
        var state = seed
        func next(_ n: Int) -> Int {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return Int((z ^ (z >> 31)) % UInt64(n))
        }
        var (read, refused) = (0, 0)
        for i in 0..<count {
            var b = bytes
            for _ in 0...next(maxChanges) {
                let choices = regions(next)
                b[choices[next(choices.count)]] = [0x00, 0xFF, 0x7F, 0x80, UInt8(next(256))][next(5)]
            }
            let path = dir.file("m\(i % 4).zip")
            try Data(b).write(to: URL(fileURLWithPath: path))
            do {
                let source = try ExportLocation.locate(path).open()
                defer { source.close() }
                var buffer = [UInt8](repeating: 0, count: 1 << 16)
                while try buffer.withUnsafeMutableBufferPointer({ try source.read($0.baseAddress!, 1 << 16) }) > 0 {}
                read += 1
            } catch is ImportError {
                refused += 1
            } catch {
                Issue.record("mutation \(i): not an import error: \(error)")
            }
        }
        return (read, refused)
    }
}
