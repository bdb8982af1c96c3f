import Foundation
import HPLibXML2

/// What a streaming parse of export.xml reports, in document order.
protocol XMLEventHandler: AnyObject {
    /// An element starts; `line` and `column` are where its start tag closes (`>` or `/>`).
    func startElement(_ name: String, attributes: XMLAttributes, line: Int, column: Int)
    func endElement(_ name: String)
    /// libxml2 reported a problem (it recovers and goes on); `code` is its error number.
    func xmlError(code: Int, line: Int, column: Int)
}

/// A streaming SAX2 parse with libxml2's push parser: element starts with their
/// attributes, element ends and errors with their positions, nothing else. No
/// tree is built; no DTD is loaded or validated, nothing is fetched from the
/// network, and only XML's predefined entities and character references are
/// expanded (the input's internal DTD subset is blanked by `SanitizingStream`).
/// Like FoundationXML's parser it recovers from errors and reports them.
///
/// Names and repeated attribute values (type, source, unit, device) become
/// Swift strings once and are reused: libxml2 interns names, so they are told
/// apart by pointer, and each attribute's last value is compared byte for byte.
final class ExportXMLStream {
    private unowned let handler: any XMLEventHandler
    private var context: xmlParserCtxtPtr?
    private var stopped = false
    /// Interned element names by libxml2's dictionary pointer.
    private var names: [(pointer: UnsafePointer<xmlChar>, name: String)] = []
    /// Attribute names by pointer, with the last value seen for each.
    private var attributeNames: [AttributeName] = []

    private struct AttributeName {
        let pointer: UnsafePointer<xmlChar>
        let name: String
        var lastBytes: [UInt8] = []
        var lastValue: String = ""
        /// Values in a row that differed from the last one: past `forgetAfter`, this
        /// attribute's values (dates, measurements) are no longer compared or kept.
        var misses = 0
    }

    /// Values longer than this are not remembered (dates and numbers change anyway).
    private static let rememberedValueLength = 160
    /// Consecutive new values after which an attribute's values are not remembered.
    private static let forgetAfter = 64
    private static let initialized: Bool = { xmlInitParser(); return true }()

    init(handler: any XMLEventHandler) {
        self.handler = handler
        _ = Self.initialized
    }

    deinit { if let c = context { xmlFreeParserCtxt(c) } }

    /// The current line and column of the parse (1-based; 0 before it starts).
    var line: Int { context.map { Int(xmlSAX2GetLineNumber(UnsafeMutableRawPointer($0))) } ?? 0 }
    var column: Int { context.map { Int(xmlSAX2GetColumnNumber(UnsafeMutableRawPointer($0))) } ?? 0 }

    /// Stops the parse after the current callback (a handler's callback failed).
    func stop() {
        stopped = true
        if let c = context { xmlStopParser(c) }
    }

    /// Parses everything `read` returns (it fills the buffer and returns the
    /// count, 0 at the end, -1 on a read error). False when the read failed or
    /// libxml2 gave up (a fatal error it cannot recover from, or `stop`).
    func parse(chunkSize: Int = 128 * 1024, read: (UnsafeMutablePointer<UInt8>, Int) -> Int) -> Bool {
        let buffer = UnsafeMutablePointer<UInt8>.allocate(capacity: chunkSize)
        defer { buffer.deallocate() }
        var ok = true
        // The first 4 bytes go to the context's creation (encoding detection), as FoundationXML does.
        var head: [UInt8] = []
        while !stopped {
            let n = read(buffer, chunkSize)
            if n < 0 { return false }
            if n == 0 { break }
            var start = 0
            if context == nil {
                let take = min(4 - head.count, n)
                head.append(contentsOf: UnsafeBufferPointer(start: buffer, count: take))
                start = take
                guard head.count == 4 else { continue }
                guard createContext(head) else { return false }
            }
            if start < n {
                let result = buffer.withMemoryRebound(to: CChar.self, capacity: n) { xmlParseChunk(context, $0 + start, Int32(n - start), 0) }
                if result != 0 { ok = false }
            }
        }
        if context == nil && !head.isEmpty && !stopped {
            guard createContext(head) else { return false }
        }
        return ok && !stopped
    }

    private func createContext(_ head: [UInt8]) -> Bool {
        var sax = xmlSAXHandler()
        sax.initialized = UInt32(XML_SAX2_MAGIC)
        sax.startElementNs = { ctx, localname, _, _, _, _, count, _, attributes in
            guard let ctx, let localname else { return }
            Unmanaged<ExportXMLStream>.fromOpaque(ctx).takeUnretainedValue().started(localname, count: Int(count), attributes)
        }
        sax.endElementNs = { ctx, localname, _, _ in
            guard let ctx, let localname else { return }
            let me = Unmanaged<ExportXMLStream>.fromOpaque(ctx).takeUnretainedValue()
            me.handler.endElement(me.name(localname))
        }
        sax.serror = { ctx, error in
            guard let ctx else { return }
            let me = Unmanaged<ExportXMLStream>.fromOpaque(ctx).takeUnretainedValue()
            me.handler.xmlError(code: Int(error?.pointee.code ?? 0), line: me.line, column: me.column)
        }
        let me = Unmanaged.passUnretained(self).toOpaque()
        context = head.withUnsafeBufferPointer { h in
            h.withMemoryRebound(to: CChar.self) { xmlCreatePushParserCtxt(&sax, me, $0.baseAddress, Int32($0.count), nil) }
        }
        guard let context else { return false }
        // Recover and report, predefined entities expanded in values (FoundationXML's
        // options), and never the network.
        xmlCtxtUseOptions(context, Int32(XML_PARSE_RECOVER.rawValue | XML_PARSE_NOENT.rawValue | XML_PARSE_NONET.rawValue))
        return true
    }

    private func name(_ pointer: UnsafePointer<xmlChar>) -> String {
        for entry in names where entry.pointer == pointer { return entry.name }
        let n = String(cString: pointer)
        if names.count < 256 { names.append((pointer, n)) }
        return n
    }

    private func started(_ localname: UnsafePointer<xmlChar>, count: Int, _ attributes: UnsafeMutablePointer<UnsafePointer<xmlChar>?>?) {
        var list = XMLAttributes()
        if count > 0, let attributes {
            list.pairs.reserveCapacity(count)
            // Worked on as a local (moved out and back): no exclusivity checks per access.
            var known = attributeNames
            attributeNames = []
            for i in 0..<count {
                // Five pointers per attribute: local name, prefix, URI, value start, value end.
                guard let key = attributes[i * 5], let start = attributes[i * 5 + 3], let end = attributes[i * 5 + 4] else { continue }
                let bytes = UnsafeBufferPointer(start: start, count: end - start)
                if let slot = Self.slot(key, in: &known) {
                    list.pairs.append((known[slot].name, Self.value(bytes, remembered: &known[slot])))
                } else {
                    list.pairs.append((String(cString: key), String(decoding: bytes, as: UTF8.self)))
                }
            }
            attributeNames = known
        }
        handler.startElement(name(localname), attributes: list, line: line, column: column)
    }

    /// The index of an attribute name in `known`, added when new; nil once 256
    /// names are known and this is not one of them.
    private static func slot(_ pointer: UnsafePointer<xmlChar>, in known: inout [AttributeName]) -> Int? {
        for i in known.indices where known[i].pointer == pointer { return i }
        guard known.count < 256 else { return nil }
        known.append(AttributeName(pointer: pointer, name: String(cString: pointer)))
        return known.count - 1
    }

    /// The value as a string: the name's last one when the bytes repeat it.
    private static func value(_ bytes: UnsafeBufferPointer<UInt8>, remembered a: inout AttributeName) -> String {
        guard bytes.count <= rememberedValueLength, a.misses < forgetAfter else { return String(decoding: bytes, as: UTF8.self) }
        let same = a.lastBytes.withUnsafeBufferPointer { last in
            last.count == bytes.count && (bytes.isEmpty || memcmp(last.baseAddress!, bytes.baseAddress!, bytes.count) == 0)
        }
        if same {
            a.misses = 0
            return a.lastValue
        }
        let s = String(decoding: bytes, as: UTF8.self)
        a.misses += 1
        a.lastBytes.removeAll(keepingCapacity: true)
        a.lastBytes.append(contentsOf: bytes)
        a.lastValue = s
        return s
    }
}

/// An element's attributes in document order. Elements have a handful, so a
/// linear search is cheaper than building a hash table for each one.
struct XMLAttributes: Sequence {
    var pairs: [(key: String, value: String)] = []

    init() {}
    init(_ dictionary: [String: String]) { pairs = dictionary.map { ($0.key, $0.value) } }

    /// The value of `key` (the last one if an attribute is repeated, as a dictionary would keep).
    subscript(_ key: String) -> String? {
        for p in pairs.reversed() where p.key == key { return p.value }
        return nil
    }

    /// These attributes with `extra`'s added where absent.
    func adding(_ extra: [String: String]) -> XMLAttributes {
        var copy = self
        for (k, v) in extra where self[k] == nil { copy.pairs.append((k, v)) }
        return copy
    }

    var dictionary: [String: String] {
        var d: [String: String] = [:]
        for p in pairs { d[p.key] = p.value }
        return d
    }

    func makeIterator() -> IndexingIterator<[(key: String, value: String)]> { pairs.makeIterator() }
}
