import Foundation
import Testing
@testable import HealthProbeArchive
import HealthProbeTestSupport

@Suite("A bundle's lines as its parts arrive: inflated parts to the applier's lines")
struct ArrivingLinesTests {
    /// Parts of whole lines, each ending with a newline (an empty line among them).
    static let parts: [[UInt8]] = [Array("{\"a\":1}\n{\"b\":2}\n".utf8), Array("\n{\"c\":3}\n".utf8), Array("{\"d\":4}\n".utf8)]
    static let lines: [[UInt8]] = ["{\"a\":1}", "{\"b\":2}", "", "{\"c\":3}", "{\"d\":4}"].map { Array($0.utf8) }

    @Test("the applier reads every line of every part in order, without newlines; the transfer ended whole")
    func linesInOrder() throws {
        let handoff = ArrivingLines(depth: 1)
        let producer = Thread {
            for part in Self.parts { try? handoff.put(part) }
            handoff.finish(failure: nil)
        }
        producer.start()
        var iterator = handoff.lines
        var read: [[UInt8]] = []
        while let line = iterator.next() { read.append(line) }
        #expect(read == Self.lines)
        #expect(!iterator.lastLineUnterminated)
        try handoff.checked()
    }

    @Test("a line a part leaves unfinished goes on in the next parts, as in the bundle's bytes; an unfinished last line is reported")
    func linesAcrossParts() throws {
        let bytes = Array("{\"a\":1}\n{\"b\":22}\n\n{\"c\":3}".utf8)
        // Every way of cutting the bytes in three.
        for i in 0...bytes.count {
            for j in i...bytes.count {
                let handoff = ArrivingLines(depth: 4)
                for part in [bytes[..<i], bytes[i..<j], bytes[j...]] where !part.isEmpty { try handoff.put(Array(part)) }
                handoff.finish(failure: nil)
                var iterator = handoff.lines
                var read: [[UInt8]] = []
                while let line = iterator.next() { read.append(line) }
                #expect(read == ["{\"a\":1}", "{\"b\":22}", "", "{\"c\":3}"].map { Array($0.utf8) }, "cut at \(i) and \(j)")
                #expect(iterator.lastLineUnterminated, "cut at \(i) and \(j)")
            }
        }
    }

    @Test("a transfer that failed ends the lines after the parts that arrived, and checked() throws its error")
    func failedTransfer() throws {
        struct Lost: Error {}
        let handoff = ArrivingLines(depth: 4)
        try handoff.put(Self.parts[0])
        handoff.finish(failure: Lost())
        #expect(Array(handoff.lines) == Array(Self.lines.prefix(2)))
        #expect(throws: Lost.self) { try handoff.checked() }
        #expect(!handoff.stalled)
    }

    @Test("before the transfer ends, checked() refuses: nothing may commit")
    func incompleteUntilFinished() throws {
        let handoff = ArrivingLines()
        #expect(throws: ArrivingLines.Incomplete.self) { try handoff.checked() }
    }

    @Test("with a part wait, lines end when no part comes in time: stalled, checked() refuses, and the sender's next put throws")
    func stalledTransfer() throws {
        let handoff = ArrivingLines(depth: 4, partWait: .milliseconds(200))
        try handoff.put(Self.parts[0])
        let started = Date()
        #expect(Array(handoff.lines) == Array(Self.lines.prefix(2)))
        #expect(Date().timeIntervalSince(started) >= 0.19)
        #expect(handoff.stalled)
        #expect(throws: ArrivingLines.Stalled.self) { try handoff.checked() }
        #expect(throws: ArrivingLines.Stalled.self) { try handoff.put(Self.parts[1]) }
        // Finished whole afterwards, it still counts as stalled: its lines were cut short.
        handoff.finish(failure: nil)
        #expect(throws: ArrivingLines.Stalled.self) { try handoff.checked() }
    }

    @Test("a part that comes within the part wait is read; the wait starts again for each part")
    func partsWithinWait() throws {
        let handoff = ArrivingLines(depth: 1, partWait: .seconds(5))
        let producer = Thread {
            for part in Self.parts {
                Thread.sleep(forTimeInterval: 0.05)
                try? handoff.put(part)
            }
            handoff.finish(failure: nil)
        }
        producer.start()
        #expect(Array(handoff.lines) == Self.lines)
        #expect(!handoff.stalled)
        try handoff.checked()
    }

    @Test("with a pace, the lines end once the bytes handed over (and the part ahead) have taken longer than their time at its rate, after its grace")
    func paceFromBytesHandedOver() throws {
        // 0.2 s of grace, then 1,000,000 bytes a second for what was handed over and 100,000 bytes ahead.
        let handoff = ArrivingLines(depth: 4, partWait: .seconds(30), pace: .init(grace: 0.2, bytesPerSecond: 1_000_000, ahead: 100_000))
        let started = Date()
        try handoff.put([UInt8](repeating: 0x41, count: 199_999) + [0x0A])
        var lines = handoff.lines
        #expect(lines.next()?.count == 199_999)
        #expect(lines.next() == nil)
        let waited = Date().timeIntervalSince(started)
        // 0.2 + (200,000 + 100,000) / 1,000,000 = 0.5 s: not the 30 s part wait.
        #expect(waited >= 0.45 && waited < 10, "\(waited) s")
        #expect(handoff.stalled)
    }

    @Test("an apply reading lines still to come, that refuses one, stops at once: its reader does not wait for the parts still to come",
          .timeLimit(.minutes(1)))
    func refusedApplyStopsReading() throws {
        let replicaDir = TempDir()
        let replica = try Archive.open(path: replicaDir.file("replica.sqlite"))
        // No part wait: a reader still waiting would wait for ever.
        let handoff = ArrivingLines(depth: 2)
        try handoff.put(Array(repeating: Array("not a header\n".utf8), count: 2 * VerifiedLines.batchSize).flatMap { $0 })
        #expect(throws: BundleError.self) {
            _ = try BundleApplier.apply(replica, lines: handoff.lines, manifestHash: String(repeating: "a", count: 64), now: 1)
        }
        #expect(handoff.stopped)
        #expect(throws: (any Error).self) { try handoff.put([0x0A]) }
    }

    @Test("newlines are counted and the header is the first line of the first part")
    func countsAndHeader() {
        #expect(Self.parts.map(ArrivingLines.lineCount) == [2, 2, 1])
        #expect(ArrivingLines.lineCount([]) == 0)
        #expect(ArrivingLines.firstLine(Self.parts[0]) == Array("{\"a\":1}".utf8))
        #expect(ArrivingLines.firstLine(Self.parts[1]) == [])
        #expect(ArrivingLines.firstLine(Array("no newline".utf8)) == Array("no newline".utf8))
    }

    @Test("parts already cut into lines come back as spare buffers (at most depth of them); filling one again changes no line read before")
    func spareBuffers() throws {
        let handoff = ArrivingLines(depth: 9)
        #expect(handoff.spareBuffer().isEmpty, "none before a part was read")
        for _ in 0..<3 {
            for part in Self.parts { try handoff.put(part) }
        }
        handoff.finish(failure: nil)
        var iterator = handoff.lines
        var read: [[UInt8]] = []
        while let line = iterator.next() {
            read.append(line)
            // Whatever a spare held is overwritten, as a part inflated into it would be.
            var spare = handoff.spareBuffer()
            for k in spare.indices { spare[k] = 0xEE }
        }
        #expect(read == Array(repeating: Self.lines, count: 3).flatMap { $0 }, "lines read are copies, not views of the parts")

        // Six parts through a hand-off of depth 2: five are done with, two kept.
        let bounded = ArrivingLines(depth: 2)
        let producer = Thread {
            for _ in 0..<2 { for part in Self.parts { try? bounded.put(part) } }
            bounded.finish(failure: nil)
        }
        producer.start()
        var lines = bounded.lines
        var count = 0
        while lines.next() != nil { count += 1 }
        #expect(count == 2 * Self.lines.count)
        var spares: [[UInt8]] = []
        while case let spare = bounded.spareBuffer(), !spare.isEmpty { spares.append(spare) }
        #expect(spares.count == 2, "at most depth spare buffers are kept")
        #expect(spares.allSatisfy { Self.parts.contains($0) }, "a spare holds a part's old bytes until it is filled again")
    }
}
