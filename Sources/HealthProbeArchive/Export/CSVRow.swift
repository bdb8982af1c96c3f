/// One RFC 4180 record built cell by cell (comma-separated, no line end),
/// quoting a cell only when it holds a comma, quote, CR or LF (`CSV.field`).
struct CSVRow {
    private(set) var bytes: [UInt8] = []
    private var cells = 0

    init(capacity: Int) { bytes.reserveCapacity(capacity) }

    private mutating func separate() {
        if cells > 0 { bytes.append(UInt8(ascii: ",")) }
        cells += 1
    }

    /// A text cell; nil is empty.
    mutating func cell(_ s: String?) {
        separate()
        if let s { bytes.append(contentsOf: CSV.field(s).utf8) }
    }

    /// A text cell from UTF-8 bytes (nil is empty): copied as they are when
    /// plain ASCII needing no quotes, else as `cell(_: String?)` writes them.
    mutating func cell(_ text: UnsafeBufferPointer<UInt8>?) {
        guard let text else { return separate() }
        for b in text where b == 0 || b >= 0x80 || b == 0x2C || b == 0x22 || b == 0x0A || b == 0x0D {
            return cell(String(decoding: text, as: UTF8.self))
        }
        separate()
        bytes.append(contentsOf: text)
    }

    /// A date cell: canonical ISO 8601 UTC text.
    mutating func date(_ seconds: Double) {
        separate()
        CanonicalDate.append(seconds, to: &bytes)
    }

    /// A number cell as canonical JSON prints it; nil (or not finite) is empty.
    mutating func number(_ d: Double?) {
        separate()
        if let text = d.flatMap(ECMAScriptNumber.format) { bytes.append(contentsOf: text.utf8) }
    }
}
