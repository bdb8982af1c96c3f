import HealthProbeCanonical

/// One RFC 4180 record written cell by cell into a writer's buffer (comma-
/// separated, no line end), quoting a cell only when it holds a comma, quote,
/// CR or LF (`CSV.field`).
struct CSVRow {
    private var cells = 0

    init() {}

    /// `following`: the row continues cells already written, so every cell starts with a comma.
    init(following: Bool) { cells = following ? 1 : 0 }

    private mutating func separate(_ w: inout CanonicalJSONWriter) {
        if cells > 0 { w.appendRaw(UInt8(ascii: ",")) }
        cells += 1
    }

    /// A text cell; nil is empty.
    mutating func cell(_ s: String?, _ w: inout CanonicalJSONWriter) {
        separate(&w)
        if let s { w.appendRaw(CSV.field(s)) }
    }

    /// A text cell from UTF-8 bytes (nil is empty): copied as they are when
    /// plain ASCII needing no quotes, else as `cell(_: String?)` writes them.
    mutating func cell(_ text: UnsafeBufferPointer<UInt8>?, _ w: inout CanonicalJSONWriter) {
        guard let text else { return separate(&w) }
        for b in text where b == 0 || b >= 0x80 || b == 0x2C || b == 0x22 || b == 0x0A || b == 0x0D {
            return cell(String(decoding: text, as: UTF8.self), &w)
        }
        separate(&w)
        w.appendRaw(text)
    }

    /// A cell already in CSV form (quoted where needed; empty is empty).
    mutating func raw(_ field: [UInt8], _ w: inout CanonicalJSONWriter) {
        separate(&w)
        w.appendRaw(field)
    }

    /// An integer cell; nil is empty.
    mutating func int(_ n: Int?, _ w: inout CanonicalJSONWriter) {
        separate(&w)
        if let n { w.writeInt(n) }
    }

    /// A date cell: canonical ISO 8601 UTC text.
    mutating func date(_ seconds: Double, _ w: inout CanonicalJSONWriter) {
        separate(&w)
        w.appendRawDate(seconds)
    }

    /// A number cell as canonical JSON prints it; nil (or not finite) is empty.
    mutating func number(_ d: Double?, _ w: inout CanonicalJSONWriter) {
        separate(&w)
        if let text = d.flatMap(ECMAScriptNumber.format) { w.appendRaw(text) }
    }
}
