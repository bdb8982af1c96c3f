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
