import Foundation
import Testing
@testable import HealthProbeImport
import HealthProbeTestSupport

/// Records every event of a parse as text.
private final class Recorder: XMLEventHandler {
    var events: [String] = []
    var stopAfter: Int?
    weak var stream: ExportXMLStream?

    func startElement(_ name: String, attributes: XMLAttributes, line: Int, column: Int) {
        let attrs = attributes.map { "\($0.key)=\($0.value)" }.joined(separator: ",")
        events.append("start \(name) [\(attrs)] @\(line):\(column)")
        if let n = stopAfter, events.count >= n { stream?.stop() }
    }
    func endElement(_ name: String) { events.append("end \(name)") }
    func xmlError(code: Int, line: Int, column: Int) { events.append("error \(code) @\(line):\(column)") }
}

/// Parses `text` handing the parser at most `chunk` bytes per read.
private func parse(_ text: String, chunk: Int, stopAfter: Int? = nil) -> (ok: Bool, events: [String]) {
    let bytes = Array(text.utf8)
    let recorder = Recorder()
    recorder.stopAfter = stopAfter
    let stream = ExportXMLStream(handler: recorder)
    recorder.stream = stream
    var offset = 0
    let ok = stream.parse(chunkSize: max(chunk, 1)) { buffer, capacity in
        let n = min(capacity, chunk, bytes.count - offset)
        for i in 0..<n { buffer[i] = bytes[offset + i] }
        offset += n
        return n
    }
    return (ok, recorder.events)
}

@Suite("export.xml event stream (libxml2 push parser)")
struct ExportXMLStreamTests {
    static let document = """
    <?xml version="1.0" encoding="UTF-8"?>
    <!DOCTYPE HealthData [
    ]>
    <HealthData locale="en_US">
     <Record type="HKQuantityTypeIdentifierStepCount" sourceName="A &amp; B &#60;3" value="1"/>
     <Record type="HKQuantityTypeIdentifierStepCount" sourceName="A &amp; B &#60;3" value="2">
      <MetadataEntry key="k" value="multi
    line"/>
     </Record>
    </HealthData>
    """

    @Test("the same events whatever the chunk size: 1, 2, 3, 4, 7, 64 bytes or the whole document")
    func chunkBoundaries() {
        let whole = parse(Self.document, chunk: 1 << 20)
        #expect(whole.ok)
        #expect(whole.events == [
            "start HealthData [locale=en_US] @4:27",
            "start Record [type=HKQuantityTypeIdentifierStepCount,sourceName=A & B <3,value=1] @5:90",
            "end Record",
            "start Record [type=HKQuantityTypeIdentifierStepCount,sourceName=A & B <3,value=2] @6:90",
            "start MetadataEntry [key=k,value=multi line] @8:6",
            "end MetadataEntry",
            "end Record",
            "end HealthData",
        ])
        for chunk in [1, 2, 3, 4, 7, 64] {
            #expect(parse(Self.document, chunk: chunk).events == whole.events, "chunk \(chunk)")
        }
    }

    @Test("a malformed element is reported with its position and the parse recovers")
    func malformed() {
        let text = """
        <HealthData>
         <Record type="x" value="1" value="2"/>
         <Record type="y"/>
        </HealthData>
        """
        for chunk in [1, 5, 4096] {
            let r = parse(text, chunk: chunk)
            #expect(r.events.contains { $0.hasPrefix("error 42 @2:") }, "chunk \(chunk): \(r.events)")
            #expect(r.events.contains("start Record [type=y] @3:18"))
            #expect(r.events.last == "end HealthData")
        }
    }

    @Test("stop() from a handler ends the parse: no later events, and parse reports false")
    func stop() {
        let r = parse(Self.document, chunk: 4096, stopAfter: 2)
        #expect(!r.ok)
        #expect(r.events.count == 2)
    }

    @Test("an empty or tiny input reports no element")
    func tiny() {
        #expect(parse("", chunk: 10).events.isEmpty)
        #expect(parse("<a", chunk: 10).events.isEmpty)
    }

    @Test("attribute lookup keeps the last of a repeated name, like a dictionary; adding keeps existing values")
    func attributes() {
        var a = XMLAttributes()
        a.pairs = [("type", "x"), ("value", "1"), ("value", "2")]
        #expect(a["value"] == "2")
        #expect(a["missing"] == nil)
        let b = a.adding(["type": "y", "extra": "z"])
        #expect(b["type"] == "x")
        #expect(b["extra"] == "z")
        #expect(a.dictionary == ["type": "x", "value": "2"])
    }
}
