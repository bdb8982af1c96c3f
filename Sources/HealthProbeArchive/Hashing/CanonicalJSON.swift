/// A JSON value for canonical (RFC 8785) encoding.
///
/// Every number is an IEEE-754 double, as in RFC 8785; integers beyond 2^53 are
/// not representable and must be carried as strings.
public indirect enum JSONValue: Sendable, Hashable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    /// Convenience for integer values.
    public static func int(_ value: Int) -> JSONValue { .number(Double(value)) }
    /// `.null` when `value` is `nil`.
    public static func optional(_ value: String?) -> JSONValue { value.map(JSONValue.string) ?? .null }
    /// `.null` when `value` is `nil`.
    public static func optional(_ value: Double?) -> JSONValue { value.map(JSONValue.number) ?? .null }
    /// `.null` when `value` is `nil`.
    public static func optional(_ value: Int?) -> JSONValue { value.map { .number(Double($0)) } ?? .null }
}

/// RFC 8785 (JSON Canonicalization Scheme) encoder.
///
/// Objects are written with keys sorted by UTF-16 code units, no insignificant
/// white space, strings escaped minimally, numbers as ECMAScript prints them.
public enum CanonicalJSON {
    /// The canonical UTF-8 bytes of `value`.
    public static func encode(_ value: JSONValue) throws(HashingError) -> [UInt8] {
        var writer = CanonicalJSONWriter()
        try writer.write(value)
        return writer.bytes
    }

    /// The canonical text of `value`.
    public static func string(_ value: JSONValue) throws(HashingError) -> String {
        String(decoding: try encode(value), as: UTF8.self)
    }

    /// Orders object keys as RFC 8785 requires: by their UTF-16 code units.
    public static func keyPrecedes(_ a: String, _ b: String) -> Bool {
        a.utf16.lexicographicallyPrecedes(b.utf16)
    }
}

/// Streaming canonical JSON writer. Callers that build objects by hand
/// (hot paths) must add keys already in canonical order; `write(_:)` sorts.
public struct CanonicalJSONWriter: Sendable {
    public private(set) var bytes: [UInt8] = []

    public init(capacity: Int = 256) { bytes.reserveCapacity(capacity) }

    /// Clears the buffer, keeping its capacity.
    public mutating func reset() { bytes.removeAll(keepingCapacity: true) }

    /// Appends bytes that are already canonical JSON (or its punctuation).
    public mutating func appendRaw(_ b: [UInt8]) { bytes.append(contentsOf: b) }

    public mutating func write(_ value: JSONValue) throws(HashingError) {
        switch value {
        case .null: bytes.append(contentsOf: [0x6E, 0x75, 0x6C, 0x6C])
        case .bool(let b): writeBool(b)
        case .number(let d): try writeNumber(d)
        case .string(let s): writeString(s)
        case .array(let items):
            bytes.append(UInt8(ascii: "["))
            for (i, item) in items.enumerated() {
                if i > 0 { bytes.append(UInt8(ascii: ",")) }
                try write(item)
            }
            bytes.append(UInt8(ascii: "]"))
        case .object(let members):
            bytes.append(UInt8(ascii: "{"))
            let keys = members.keys.sorted(by: CanonicalJSON.keyPrecedes)
            for (i, key) in keys.enumerated() {
                if i > 0 { bytes.append(UInt8(ascii: ",")) }
                writeString(key)
                bytes.append(UInt8(ascii: ":"))
                try write(members[key]!)
            }
            bytes.append(UInt8(ascii: "}"))
        }
    }

    public mutating func writeBool(_ b: Bool) {
        bytes.append(contentsOf: b ? Array("true".utf8) : Array("false".utf8))
    }

    public mutating func writeNumber(_ d: Double) throws(HashingError) {
        // Integral values below 2^53 print as plain integers.
        if d == d.rounded(.towardZero) && d.magnitude < 9_007_199_254_740_992 {
            writeInt(Int(d))
            return
        }
        guard let text = ECMAScriptNumber.format(d) else {
            throw HashingError(code: .nonFiniteNumber, message: "a number to be hashed is NaN or infinite; canonical JSON cannot represent it")
        }
        bytes.append(contentsOf: text.utf8)
    }

    /// Writes an integer (exact for |n| < 2^53).
    public mutating func writeInt(_ n: Int) {
        if n == 0 { bytes.append(0x30); return }
        var x = n.magnitude
        if n < 0 { bytes.append(UInt8(ascii: "-")) }
        var tmp: (UInt64, UInt64, UInt64) = (0, 0, 0)  // 24 bytes of scratch
        withUnsafeMutableBytes(of: &tmp) { buf in
            var i = buf.count
            while x > 0 { i -= 1; buf[i] = 0x30 + UInt8(x % 10); x /= 10 }
            bytes.append(contentsOf: buf[i...])
        }
    }

    public mutating func writeNull() { bytes.append(contentsOf: [0x6E, 0x75, 0x6C, 0x6C]) }

    public mutating func writeString(_ s: String) {
        bytes.append(UInt8(ascii: "\""))
        var s = s
        let clean: Bool = s.withUTF8 { buf in
            for b in buf where b < 0x20 || b == 0x22 || b == 0x5C { return false }
            bytes.append(contentsOf: buf)
            return true
        }
        if !clean { appendEscaped(s) }
        bytes.append(UInt8(ascii: "\""))
    }

    /// Writes UTF-8 `text` as a string: what `writeString` writes for the
    /// `String` it decodes to, without building one when it is plain ASCII.
    public mutating func writeString(utf8 text: UnsafeBufferPointer<UInt8>) {
        guard Self.isPlain(text) else { return writeString(String(decoding: text, as: UTF8.self)) }
        bytes.append(UInt8(ascii: "\""))
        bytes.append(contentsOf: text)
        bytes.append(UInt8(ascii: "\""))
    }

    /// True when `text` is ASCII that a JSON string holds unescaped.
    @inline(__always)
    static func isPlain(_ text: UnsafeBufferPointer<UInt8>) -> Bool {
        for b in text where b < 0x20 || b == 0x22 || b == 0x5C || b >= 0x80 { return false }
        return true
    }

    /// Writes a date as its canonical ISO 8601 string (`"2025-05-23T12:00:00.250Z"`).
    public mutating func writeDate(_ seconds: Double) {
        bytes.append(UInt8(ascii: "\""))
        CanonicalDate.append(seconds, to: &bytes)
        bytes.append(UInt8(ascii: "\""))
    }

    private static let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)

    private mutating func appendEscaped(_ s: String) {
        for byte in s.utf8 {
            switch byte {
            case 0x22: bytes.append(0x5C); bytes.append(0x22)
            case 0x5C: bytes.append(0x5C); bytes.append(0x5C)
            case 0x08: bytes.append(0x5C); bytes.append(UInt8(ascii: "b"))
            case 0x09: bytes.append(0x5C); bytes.append(UInt8(ascii: "t"))
            case 0x0A: bytes.append(0x5C); bytes.append(UInt8(ascii: "n"))
            case 0x0C: bytes.append(0x5C); bytes.append(UInt8(ascii: "f"))
            case 0x0D: bytes.append(0x5C); bytes.append(UInt8(ascii: "r"))
            case 0x00..<0x20:
                bytes.append(contentsOf: [0x5C, UInt8(ascii: "u"), 0x30, 0x30])
                bytes.append(Self.hexDigits[Int(byte >> 4)])
                bytes.append(Self.hexDigits[Int(byte & 0xF)])
            default: bytes.append(byte)
            }
        }
    }

    // Hand-built objects (keys must be given in canonical order). A bit per
    // nesting level says whether the current object already has a member.
    private var depth = 0
    private var hasMember: UInt64 = 0

    public mutating func beginObject() {
        bytes.append(UInt8(ascii: "{"))
        depth += 1
        precondition(depth < 64, "canonical JSON nested too deeply")
        hasMember &= ~(1 << UInt64(depth))
    }

    public mutating func endObject() {
        bytes.append(UInt8(ascii: "}"))
        depth -= 1
    }

    /// Writes `"key":`; the value must follow.
    public mutating func key(_ k: StaticString) {
        let bit: UInt64 = 1 << UInt64(depth)
        if hasMember & bit != 0 { bytes.append(UInt8(ascii: ",")) }
        hasMember |= bit
        bytes.append(UInt8(ascii: "\""))
        k.withUTF8Buffer { bytes.append(contentsOf: $0) }
        bytes.append(UInt8(ascii: "\""))
        bytes.append(UInt8(ascii: ":"))
    }

    public mutating func field(_ k: StaticString, _ v: String?) {
        key(k)
        if let v { writeString(v) } else { writeNull() }
    }

    /// A string member from UTF-8 bytes (`nil` writes null).
    public mutating func field(_ k: StaticString, utf8 v: UnsafeBufferPointer<UInt8>?) {
        key(k)
        if let v { writeString(utf8: v) } else { writeNull() }
    }

    public mutating func field(_ k: StaticString, _ v: Int?) {
        key(k)
        if let v { writeInt(v) } else { writeNull() }
    }

    public mutating func field(_ k: StaticString, _ v: Double?) throws(HashingError) {
        key(k)
        if let v { try writeNumber(v) } else { writeNull() }
    }
}
