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
        guard let text = ECMAScriptNumber.format(d) else {
            throw HashingError(code: .nonFiniteNumber, message: "a number to be hashed is NaN or infinite; canonical JSON cannot represent it")
        }
        bytes.append(contentsOf: text.utf8)
    }

    /// Writes an integer (exact for |n| < 2^53).
    public mutating func writeInt(_ n: Int) {
        bytes.append(contentsOf: String(n).utf8)
    }

    public mutating func writeNull() { bytes.append(contentsOf: [0x6E, 0x75, 0x6C, 0x6C]) }

    public mutating func writeString(_ s: String) {
        bytes.append(UInt8(ascii: "\""))
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
                let hex: [UInt8] = Array("0123456789abcdef".utf8)
                bytes.append(contentsOf: Array("\\u00".utf8))
                bytes.append(hex[Int(byte >> 4)])
                bytes.append(hex[Int(byte & 0xF)])
            default: bytes.append(byte)
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }

    // Hand-built objects (keys must be given in canonical order).
    private var needsComma: [Bool] = []

    public mutating func beginObject() { bytes.append(UInt8(ascii: "{")); needsComma.append(false) }
    public mutating func endObject() { bytes.append(UInt8(ascii: "}")); needsComma.removeLast() }

    /// Writes `"key":`; the value must follow.
    public mutating func key(_ k: StaticString) {
        if needsComma[needsComma.count - 1] { bytes.append(UInt8(ascii: ",")) }
        needsComma[needsComma.count - 1] = true
        bytes.append(UInt8(ascii: "\""))
        k.withUTF8Buffer { bytes.append(contentsOf: $0) }
        bytes.append(UInt8(ascii: "\""))
        bytes.append(UInt8(ascii: ":"))
    }

    public mutating func field(_ k: StaticString, _ v: String?) {
        key(k)
        if let v { writeString(v) } else { writeNull() }
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
