import Foundation
import Testing
@testable import HealthProbeNode

@Suite("A restore's hand-off: inflated parts to the applier's lines")
struct RestoreLinesTests {
    /// Parts of whole lines, each ending with a newline (an empty line among them).
    static let parts: [[UInt8]] = [Array("{\"a\":1}\n{\"b\":2}\n".utf8), Array("\n{\"c\":3}\n".utf8), Array("{\"d\":4}\n".utf8)]
    static let lines: [[UInt8]] = ["{\"a\":1}", "{\"b\":2}", "", "{\"c\":3}", "{\"d\":4}"].map { Array($0.utf8) }

    @Test("the applier reads every line of every part in order, without newlines; the transfer ended whole")
    func linesInOrder() throws {
        let handoff = RestoreLines(depth: 1)
        let producer = Thread {
            for part in Self.parts { try? handoff.put(part) }
            handoff.finish(failure: nil)
        }
        producer.start()
        let read = Array(handoff.lines)
        #expect(read == Self.lines)
        try handoff.checked()
    }

    @Test("a transfer that failed ends the lines after the parts that arrived, and checked() throws its error")
    func failedTransfer() throws {
        struct Lost: Error {}
        let handoff = RestoreLines(depth: 4)
        try handoff.put(Self.parts[0])
        handoff.finish(failure: Lost())
        #expect(Array(handoff.lines) == Array(Self.lines.prefix(2)))
        #expect(throws: Lost.self) { try handoff.checked() }
    }

    @Test("before the transfer ends, checked() refuses: nothing may commit")
    func incompleteUntilFinished() throws {
        let handoff = RestoreLines()
        #expect(throws: SyncRestoreIncomplete.self) { try handoff.checked() }
    }

    @Test("newlines are counted and the header is the first line of the first part")
    func countsAndHeader() {
        #expect(Self.parts.map(RestoreLines.lineCount) == [2, 2, 1])
        #expect(RestoreLines.lineCount([]) == 0)
        #expect(RestoreLines.firstLine(Self.parts[0]) == Array("{\"a\":1}".utf8))
        #expect(RestoreLines.firstLine(Self.parts[1]) == [])
        #expect(RestoreLines.firstLine(Array("no newline".utf8)) == Array("no newline".utf8))
    }
}
