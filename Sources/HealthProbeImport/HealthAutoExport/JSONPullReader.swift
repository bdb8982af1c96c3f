import HealthProbeCanonical

/// A pull reader over one JSON document that never builds the whole tree: the caller
/// walks it member by member and reads, skips or materializes each value. As strict as
/// `JSONParser` (RFC 8259; no duplicate keys, valid UTF-8, at most 64 containers deep,
/// nothing after the value): a skipped value is checked as fully as a read one.
///
/// Reads bytes in memory, or a file in chunks (`HAEBody`). A copy is an independent
/// reader at the same place: a fork, to come back to a member once its siblings are known.
struct JSONPullReader {
    /// Why the document is not JSON, with the byte offset.
    struct Error: Swift.Error, Sendable, Equatable, CustomStringConvertible {
        let offset: Int
        let reason: String
        var description: String { "invalid JSON at byte \(offset): \(reason)" }
    }

    enum Kind: Sendable {
        case object, array, string, number, bool, null
    }

    /// One open container: its keys so far (objects), for the duplicate check.
    private struct Frame {
        var isObject: Bool
        var first = true
        var keys: [String] = []
        var keySet: Set<String>?
    }

    static let maxDepth = 64

    private var buf: [UInt8]
    /// Absolute offset of `buf[0]` in the document.
    private var base = 0
    private var pos = 0
    private var end: Int
    private let source: HAEBody
    private var stack: [Frame] = []
    /// A key was read and its value not yet (or the document's value not yet).
    private var expectingValue = true
    private var scratch: [UInt8] = []

    init(_ source: HAEBody) throws {
        self.source = source
        switch source.storage {
        case .memory(let bytes, chunk: nil):
            buf = bytes
            end = bytes.count
        default:
            buf = []
            end = 0
        }
        stack.reserveCapacity(8)
    }

    /// Containers open now (0 at the top level).
    var depth: Int { stack.count }

    /// Byte offset of the next unread byte.
    var offset: Int { base + pos }

    // MARK: structure

    /// The kind of the next value (white space skipped); throws at the end of input or a byte no value starts with.
    mutating func peekKind() throws -> Kind {
        try skipSpace()
        guard let c = try peekByte() else { throw fail("unexpected end of input") }
        switch c {
        case UInt8(ascii: "\""): return .string
        case UInt8(ascii: "{"): return .object
        case UInt8(ascii: "["): return .array
        case UInt8(ascii: "t"), UInt8(ascii: "f"): return .bool
        case UInt8(ascii: "n"): return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number
        default: throw fail("unexpected character")
        }
    }

    /// Enters the object that `peekKind` announced.
    mutating func enterObject() throws { try enter(UInt8(ascii: "{"), object: true) }

    /// Enters the array that `peekKind` announced.
    mutating func enterArray() throws { try enter(UInt8(ascii: "["), object: false) }

    private mutating func enter(_ open: UInt8, object: Bool) throws {
        try skipSpace()
        guard try peekByte() == open else { throw fail(object ? "expected an object" : "expected an array") }
        guard stack.count < Self.maxDepth else { throw fail("nested more than 64 deep") }
        pos += 1
        stack.append(Frame(isObject: object))
        expectingValue = false
    }

    /// The next key of the open object (its value is read next), or nil once the object closed.
    mutating func nextKey() throws -> String? {
        try skipSpace()
        guard let c = try peekByte() else { throw fail("unexpected end of input") }
        let top = stack.count - 1
        if c == UInt8(ascii: "}") {
            pos += 1
            stack.removeLast()
            return nil
        }
        if stack[top].first {
            stack[top].first = false
        } else {
            guard c == UInt8(ascii: ",") else { throw fail("expected ',' or '}'") }
            pos += 1
            try skipSpace()
        }
        guard try peekByte() == UInt8(ascii: "\"") else { throw fail("expected an object key") }
        let keyOffset = offset
        let key = try string(limit: Int.max) ?? ""
        if stack[top].keySet != nil {
            guard stack[top].keySet!.insert(key).inserted else { throw Error(offset: keyOffset, reason: "duplicate object key") }
        } else {
            guard !stack[top].keys.contains(key) else { throw Error(offset: keyOffset, reason: "duplicate object key") }
            stack[top].keys.append(key)
            if stack[top].keys.count > 16 {
                stack[top].keySet = Set(stack[top].keys)
                stack[top].keys = []
            }
        }
        try skipSpace()
        guard try peekByte() == UInt8(ascii: ":") else { throw fail("expected ':'") }
        pos += 1
        expectingValue = true
        return key
    }

    /// Whether the open array has another element (read it next); false once the array closed.
    mutating func nextElement() throws -> Bool {
        try skipSpace()
        guard let c = try peekByte() else { throw fail("unexpected end of input") }
        let top = stack.count - 1
        if stack[top].first {
            stack[top].first = false
            if c == UInt8(ascii: "]") {
                pos += 1
                stack.removeLast()
                return false
            }
        } else {
            if c == UInt8(ascii: "]") {
                pos += 1
                stack.removeLast()
                return false
            }
            guard c == UInt8(ascii: ",") else { throw fail("expected ',' or ']'") }
            pos += 1
        }
        expectingValue = true
        return true
    }

    /// Skips the next value, checking it as strictly as reading it would.
    mutating func skipValue() throws {
        switch try peekKind() {
        case .string: _ = try string(limit: -1)
        case .number: _ = try number()
        case .bool, .null: _ = try literal()
        case .object:
            try enterObject()
            while try nextKey() != nil { try skipValue() }
        case .array:
            try enterArray()
            while try nextElement() { try skipValue() }
        }
        expectingValue = false
    }

    /// Skips whatever is left until `depth` containers are open: the rest of a member
    /// a caller gave up on (it refused it), checked as strictly as the rest.
    mutating func skip(toDepth target: Int) throws {
        if expectingValue, stack.count >= target { try skipValue() }
        while stack.count > target {
            if stack[stack.count - 1].isObject {
                while try nextKey() != nil { try skipValue() }
            } else {
                while try nextElement() { try skipValue() }
            }
        }
    }

    /// Checks the rest of the document: every container closes and nothing follows.
    mutating func finish() throws {
        try skip(toDepth: 0)
        try skipSpace()
        guard try peekByte() == nil else { throw fail("data after the JSON value") }
    }

    // MARK: values

    /// The next value built as a `JSONValue`, `levels` containers deep: a container
    /// below that is checked and skipped, kept as an empty one of its kind. Text longer
    /// than `stringLimit` bytes is kept as `stringLimit + 1` placeholder bytes: enough for
    /// the caller's length check to refuse it, never the text. At the first level only
    /// the members in `keep` are built (nil: all); the others are checked and skipped.
    mutating func readValue(levels: Int, stringLimit: Int, keep: Set<String>? = nil) throws -> JSONValue {
        let v: JSONValue
        switch try peekKind() {
        case .string:
            v = .string(try string(limit: stringLimit) ?? String(repeating: "?", count: stringLimit + 1))
        case .number: v = .number(try number())
        case .bool: v = .bool(try literal() == 1)
        case .null:
            _ = try literal()
            v = .null
        case .object:
            guard levels > 0 else {
                try skipValue()
                return .object([:])
            }
            try enterObject()
            var members: [String: JSONValue] = [:]
            while let key = try nextKey() {
                if keep == nil || keep!.contains(key) {
                    members[key] = try readValue(levels: levels - 1, stringLimit: stringLimit)
                } else {
                    try skipValue()
                }
            }
            v = .object(members)
        case .array:
            guard levels > 0 else {
                try skipValue()
                return .array([])
            }
            try enterArray()
            var items: [JSONValue] = []
            while try nextElement() { items.append(try readValue(levels: levels - 1, stringLimit: stringLimit)) }
            v = .array(items)
        }
        expectingValue = false
        return v
    }

    // MARK: bytes

    private func fail(_ reason: String) -> Error { Error(offset: offset, reason: reason) }

    @inline(__always)
    private mutating func peekByte() throws -> UInt8? {
        if pos < end { return buf[pos] }
        return try refill() ? buf[pos] : nil
    }

    /// Reads the next chunk once every byte of the current one was used; false at the end.
    private mutating func refill() throws -> Bool {
        guard pos >= end else { return true }
        let next = base + end
        switch source.storage {
        case .memory(_, chunk: nil):
            return false
        case .memory(let bytes, chunk: let chunk?):
            guard next < bytes.count else { return false }
            buf = Array(bytes[next..<min(bytes.count, next + chunk)])
        case .file(let file):
            if buf.count != file.chunkBytes { buf = [UInt8](repeating: 0, count: file.chunkBytes) }
            let n = try file.read(into: &buf, at: next)
            base = next
            pos = 0
            end = n
            return n > 0
        }
        base = next
        pos = 0
        end = buf.count
        return true
    }

    private mutating func skipSpace() throws {
        while true {
            while pos < end {
                let c = buf[pos]
                guard c == 0x20 || c == 0x0A || c == 0x0D || c == 0x09 else { return }
                pos += 1
            }
            if try !refill() { return }
        }
    }

    /// `true`, `false` or `null`: 1, 0 or -1.
    private mutating func literal() throws -> Int {
        let word: StaticString, value: Int
        switch try peekByte() {
        case UInt8(ascii: "t"): (word, value) = ("true", 1)
        case UInt8(ascii: "f"): (word, value) = ("false", 0)
        default: (word, value) = ("null", -1)
        }
        for k in 0..<word.utf8CodeUnitCount {
            guard let c = try peekByte() else { throw fail("unexpected end of input") }
            guard c == word.utf8Start[k] else { throw fail("invalid literal") }
            pos += 1
        }
        return value
    }

    /// The string at the opening quote, checked to its end; nil when longer than `limit` bytes.
    private mutating func string(limit: Int) throws -> String? {
        let start = offset
        pos += 1
        // Fast path: the whole string is in the buffer, without escapes.
        var j = pos, high: UInt8 = 0
        while j < end {
            let c = buf[j]
            if c == UInt8(ascii: "\"") || c == UInt8(ascii: "\\") || c < 0x20 { break }
            high |= c
            j += 1
        }
        if j < end, buf[j] == UInt8(ascii: "\"") {
            let n = j - pos
            defer { pos = j + 1 }
            if high < 0x80 {
                return n <= limit ? String(decoding: buf[pos..<j], as: UTF8.self) : nil
            }
            guard let s = String(validating: buf[pos..<j], as: UTF8.self) else { throw Error(offset: start + 1, reason: "string is not valid UTF-8") }
            return n <= limit ? s : nil
        }
        // Escapes, a control character, or the string goes on in the next chunk.
        scratch.removeAll(keepingCapacity: true)
        while true {
            guard let c = try peekByte() else { throw fail("unterminated string") }
            if c == UInt8(ascii: "\"") {
                pos += 1
                guard let s = String(validating: scratch, as: UTF8.self) else { throw Error(offset: start + 1, reason: "string is not valid UTF-8") }
                return scratch.count <= limit ? s : nil
            }
            if c < 0x20 { throw fail("control character in a string") }
            pos += 1
            if c != UInt8(ascii: "\\") {
                scratch.append(c)
                continue
            }
            guard let e = try peekByte() else { throw fail("unterminated escape") }
            pos += 1
            switch e {
            case UInt8(ascii: "\""): scratch.append(0x22)
            case UInt8(ascii: "\\"): scratch.append(0x5C)
            case UInt8(ascii: "/"): scratch.append(0x2F)
            case UInt8(ascii: "b"): scratch.append(0x08)
            case UInt8(ascii: "f"): scratch.append(0x0C)
            case UInt8(ascii: "n"): scratch.append(0x0A)
            case UInt8(ascii: "r"): scratch.append(0x0D)
            case UInt8(ascii: "t"): scratch.append(0x09)
            case UInt8(ascii: "u"):
                var scalar = try hex4()
                if (0xD800..<0xDC00).contains(scalar) {
                    guard try peekByte() == UInt8(ascii: "\\") else { throw fail("lone high surrogate") }
                    pos += 1
                    guard try peekByte() == UInt8(ascii: "u") else { throw fail("lone high surrogate") }
                    pos += 1
                    let low = try hex4()
                    guard (0xDC00..<0xE000).contains(low) else { throw fail("invalid low surrogate") }
                    scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                } else if (0xDC00..<0xE000).contains(scalar) {
                    throw fail("lone low surrogate")
                }
                guard let u = Unicode.Scalar(scalar) else { throw fail("invalid unicode escape") }
                scratch.append(contentsOf: String(Character(u)).utf8)
            default: throw fail("invalid escape")
            }
        }
    }

    private mutating func hex4() throws -> UInt32 {
        var v: UInt32 = 0
        for _ in 0..<4 {
            guard let c = try peekByte() else { throw fail("short unicode escape") }
            guard let d = JSONParser.hexDigit(c) else { throw fail("invalid hex digit") }
            v = v << 4 | d
            pos += 1
        }
        return v
    }

    /// Appends the current byte to `scratch` and moves on.
    @inline(__always)
    private mutating func take(_ c: UInt8) {
        scratch.append(c)
        pos += 1
    }

    private static func isDigit(_ c: UInt8?) -> Bool {
        guard let c else { return false }
        return c >= 0x30 && c <= 0x39
    }

    /// The number at its first byte, as `JSONParser` reads it.
    private mutating func number() throws -> Double {
        let start = offset
        scratch.removeAll(keepingCapacity: true)
        var negative = false
        if try peekByte() == UInt8(ascii: "-") {
            negative = true
            take(UInt8(ascii: "-"))
        }
        guard let first = try peekByte(), Self.isDigit(first) else { throw fail("invalid number") }
        var integer: UInt64 = 0
        var digits = 0
        if first == 0x30 {
            take(first)
            if Self.isDigit(try peekByte()) { throw fail("leading zero in a number") }
            digits = 1
        } else {
            while let c = try peekByte(), Self.isDigit(c) {
                if digits < 18 { integer = integer * 10 + UInt64(c - 0x30) }
                digits += 1
                take(c)
            }
        }
        var simple = digits <= 15
        if try peekByte() == UInt8(ascii: ".") {
            simple = false
            take(UInt8(ascii: "."))
            guard Self.isDigit(try peekByte()) else { throw fail("invalid fraction") }
            while let c = try peekByte(), Self.isDigit(c) { take(c) }
        }
        if let e = try peekByte(), e == UInt8(ascii: "e") || e == UInt8(ascii: "E") {
            simple = false
            take(e)
            if let s = try peekByte(), s == UInt8(ascii: "+") || s == UInt8(ascii: "-") { take(s) }
            guard Self.isDigit(try peekByte()) else { throw fail("invalid exponent") }
            while let c = try peekByte(), Self.isDigit(c) { take(c) }
        }
        if simple {
            let d = Double(integer)
            return negative ? -d : d
        }
        guard let d = Double(String(decoding: scratch, as: UTF8.self)), d.isFinite else { throw Error(offset: start, reason: "number out of range") }
        return d
    }
}
