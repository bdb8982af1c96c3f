import Foundation

/// A strict RFC 8259 JSON parser from UTF-8 bytes to `JSONValue`.
///
/// Used on every bundle and export line, where Foundation's `JSONDecoder`
/// (through `Codable`) cost about 40 µs a line. Strict: one value, no trailing
/// bytes, no duplicate object keys, valid UTF-8, nesting at most 64 deep.
/// With `canonical: true` it also requires RFC 8785 form (what
/// `CanonicalJSON.encode` would write: no white space, keys in UTF-16 order,
/// minimal escapes, ECMAScript numbers), without re-encoding.
public struct JSONParser {
    /// Why a document was refused, with the byte offset.
    public struct Error: Swift.Error, Sendable, Equatable, CustomStringConvertible {
        public let offset: Int
        public let reason: String
        public var description: String { "invalid JSON at byte \(offset): \(reason)" }
    }

    /// Parses `bytes` as one JSON document; with `canonical`, refuses any other form than RFC 8785's.
    public static func parse(_ bytes: some Collection<UInt8>, canonical: Bool = false) throws(Error) -> JSONValue {
        var result: Result<JSONValue, Error>?
        let done: Void? = bytes.withContiguousStorageIfAvailable { buf in
            result = Result { () throws(Error) in try parse(buffer: UnsafeRawBufferPointer(buf), canonical: canonical) }
        }
        if done == nil {
            let copy = Array(bytes)
            result = copy.withUnsafeBytes { buf in Result { () throws(Error) in try parse(buffer: buf, canonical: canonical) } }
        }
        return try result!.get()
    }

    /// Parses the bytes of `text`.
    public static func parse(_ text: String) throws(Error) -> JSONValue { try parse(Array(text.utf8)) }

    static func parse(buffer: UnsafeRawBufferPointer, canonical: Bool) throws(Error) -> JSONValue {
        var p = JSONParser(buffer, canonical: canonical)
        p.skipSpace()
        let v = try p.value(depth: 0)
        p.skipSpace()
        guard p.i == p.end else { throw p.fail("data after the JSON value") }
        return v
    }

    /// Validates `bytes` as one canonical (RFC 8785) JSON document and returns it
    /// with a flat table of its object members, building no values.
    public static func flat(_ bytes: [UInt8]) throws(Error) -> FlatJSON {
        var result: Result<FlatJSON, Error>?
        bytes.withUnsafeBytes { buf in
            result = Result { () throws(Error) in
                var p = JSONParser(buf, canonical: true, flat: true)
                p.flatMembers.reserveCapacity(32)
                let isObject = p.i < p.end && buf[0] == UInt8(ascii: "{")
                _ = try p.value(depth: 0)
                guard p.i == p.end else { throw p.fail("data after the JSON value") }
                return FlatJSON(bytes: bytes, members: p.flatMembers, isObject: isObject)
            }
        }
        return try result!.get()
    }

    private let b: UnsafeRawBufferPointer
    private var i = 0
    private let end: Int
    private let canonical: Bool
    /// Flat mode (canonical only): members are recorded, values are not built.
    private let flatMode: Bool
    private var flatMembers: [FlatJSON.Member] = []
    private var flatParent: Int32 = -1

    private init(_ b: UnsafeRawBufferPointer, canonical: Bool, flat: Bool = false) {
        self.b = b
        self.canonical = canonical
        flatMode = flat
        end = b.count
    }

    private func notCanonical(_ reason: String) -> Error { Error(offset: i, reason: "not canonical (RFC 8785): " + reason) }

    private func fail(_ reason: String) -> Error { Error(offset: i, reason: reason) }

    private mutating func skipSpace() {
        // Canonical form has none: the structural check that follows then fails.
        if canonical { return }
        while i < end {
            let c = b[i]
            guard c == 0x20 || c == 0x0A || c == 0x0D || c == 0x09 else { return }
            i += 1
        }
    }

    private mutating func value(depth: Int) throws(Error) -> JSONValue {
        guard i < end else { throw fail("unexpected end of input") }
        switch b[i] {
        case UInt8(ascii: "\""):
            if flatMode { _ = try skipString(); return .null }
            return .string(try string())
        case UInt8(ascii: "{"):
            if flatMode { try flatObject(depth: depth + 1); return .null }
            return try object(depth: depth + 1)
        case UInt8(ascii: "["): return try array(depth: depth + 1)
        case UInt8(ascii: "t"): try literal("true"); return .bool(true)
        case UInt8(ascii: "f"): try literal("false"); return .bool(false)
        case UInt8(ascii: "n"): try literal("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number(try number())
        default: throw fail("unexpected character")
        }
    }

    private mutating func literal(_ word: StaticString) throws(Error) {
        let n = word.utf8CodeUnitCount
        guard end - i >= n else { throw fail("unexpected end of input") }
        for k in 0..<n where b[i + k] != word.utf8Start[k] { throw fail("invalid literal") }
        i += n
    }

    private mutating func object(depth: Int) throws(Error) -> JSONValue {
        guard depth <= 64 else { throw fail("nested more than 64 deep") }
        i += 1
        var members: [String: JSONValue] = [:]
        skipSpace()
        if i < end, b[i] == UInt8(ascii: "}") { i += 1; return .object(members) }
        members.reserveCapacity(16)
        var previousKey: (start: Int, end: Int, text: String)?
        while true {
            skipSpace()
            guard i < end, b[i] == UInt8(ascii: "\"") else { throw fail("expected an object key") }
            let keyOffset = i
            let key = try string()
            if canonical {
                let current = (start: keyOffset + 1, end: i - 1, text: key)
                if let prev = previousKey, !keyInOrder(prev, current) {
                    throw Error(offset: keyOffset, reason: "not canonical (RFC 8785): object keys not in UTF-16 order")
                }
                previousKey = current
            }
            skipSpace()
            guard i < end, b[i] == UInt8(ascii: ":") else { throw fail("expected ':'") }
            i += 1
            skipSpace()
            let v = try value(depth: depth)
            guard members.updateValue(v, forKey: key) == nil else { throw Error(offset: keyOffset, reason: "duplicate object key") }
            skipSpace()
            guard i < end else { throw fail("unexpected end of input") }
            if b[i] == UInt8(ascii: ",") { i += 1; continue }
            if b[i] == UInt8(ascii: "}") { i += 1; return .object(members) }
            throw fail("expected ',' or '}'")
        }
    }

    /// `object` in flat mode: records each member (key and value ranges) instead
    /// of building a dictionary. Keys in strict canonical order rule out duplicates.
    private mutating func flatObject(depth: Int) throws(Error) {
        guard depth <= 64 else { throw fail("nested more than 64 deep") }
        i += 1
        if i < end, b[i] == UInt8(ascii: "}") { i += 1; return }
        let parent = flatParent
        var previous: (start: Int, end: Int, plain: Bool)?
        while true {
            guard i < end, b[i] == UInt8(ascii: "\"") else { throw fail("expected an object key") }
            let keyOffset = i
            let keyPlain = try skipString()
            let key = (start: keyOffset + 1, end: i - 1, plain: keyPlain)
            if let prev = previous, !(try flatKeyInOrder(prev, key)) {
                throw Error(offset: keyOffset, reason: "not canonical (RFC 8785): object keys not in UTF-16 order")
            }
            previous = key
            guard i < end, b[i] == UInt8(ascii: ":") else { throw fail("expected ':'") }
            i += 1
            guard i < end else { throw fail("unexpected end of input") }
            let index = flatMembers.count
            var member = FlatJSON.Member(parent: parent, keyStart: Int32(key.start), keyEnd: Int32(key.end), valueStart: Int32(i), valueEnd: 0,
                                         type: .null, plain: true, number: 0)
            flatMembers.append(member)
            switch b[i] {
            case UInt8(ascii: "\""):
                member.type = .string
                member.plain = try skipString()
            case UInt8(ascii: "{"):
                member.type = .object
                flatParent = Int32(index)
                try flatObject(depth: depth + 1)
                flatParent = parent
            case UInt8(ascii: "["):
                member.type = .array
                flatParent = -2
                _ = try array(depth: depth + 1)
                flatParent = parent
            default:
                switch try value(depth: depth) {
                case .number(let d): member.type = .number; member.number = d
                case .bool: member.type = .bool
                default: member.type = .null
                }
            }
            member.valueEnd = Int32(i)
            flatMembers[index] = member
            guard i < end else { throw fail("unexpected end of input") }
            if b[i] == UInt8(ascii: ",") { i += 1; continue }
            if b[i] == UInt8(ascii: "}") { i += 1; return }
            throw fail("expected ',' or '}'")
        }
    }

    /// Validates the string at `i` (its opening quote) without building it;
    /// returns whether it has no escapes.
    private mutating func skipString() throws(Error) -> Bool {
        let open = i
        i += 1
        // Eight bytes at a time while none is a quote, a backslash, a control
        // character or non-ASCII: most strings here are hashes and dates.
        if let base = b.baseAddress {
            let ones: UInt64 = 0x0101_0101_0101_0101, highs: UInt64 = 0x8080_8080_8080_8080
            while i &+ 8 <= end {
                let w = base.loadUnaligned(fromByteOffset: i, as: UInt64.self)
                let quote = w ^ (ones &* 0x22), backslash = w ^ (ones &* 0x5C)
                // A byte below 0x20 (or 0x22, 0x5C: zero after the xor) sets its high bit here; so does any byte at or over 0x80.
                let special = ((w &- ones &* 0x20) | (quote &- ones) | (backslash &- ones) | w) & highs
                if special != 0 { break }
                i &+= 8
            }
        }
        while i < end {
            let c = b[i]
            if c == UInt8(ascii: "\"") { i += 1; return true }
            if c == UInt8(ascii: "\\") || c >= 0x80 { break }
            if c < 0x20 { throw fail("control character in a string") }
            i += 1
        }
        // Escapes or non-ASCII: the full decoder validates.
        i = open
        _ = try string()
        for k in open + 1..<i - 1 where b[k] == UInt8(ascii: "\\") { return false }
        return true
    }

    /// `keyInOrder` for flat mode: ASCII keys without escapes compare by their bytes; others are decoded.
    private func flatKeyInOrder(_ a: (start: Int, end: Int, plain: Bool), _ c: (start: Int, end: Int, plain: Bool)) throws(Error) -> Bool {
        // Plain loops and memcmp: this runs for every key of every line.
        func ascii(_ r: (start: Int, end: Int, plain: Bool)) -> Bool {
            guard r.plain else { return false }
            var k = r.start
            while k < r.end { if b[k] >= 0x80 { return false }; k &+= 1 }
            return true
        }
        if ascii(a) && ascii(c) {
            let na = a.end - a.start, nc = c.end - c.start
            let order = memcmp(b.baseAddress! + a.start, b.baseAddress! + c.start, min(na, nc))
            return order != 0 ? order < 0 : na < nc
        }
        var p = JSONParser(b, canonical: true)
        p.i = a.start - 1
        let ta = try p.string()
        p.i = c.start - 1
        let tc = try p.string()
        return CanonicalJSON.keyPrecedes(ta, tc)
    }

    /// Whether key `a` precedes key `b` strictly in UTF-16 order. ASCII keys
    /// written without escapes compare by their bytes.
    private func keyInOrder(_ a: (start: Int, end: Int, text: String), _ b: (start: Int, end: Int, text: String)) -> Bool {
        let na = a.end - a.start, nb = b.end - b.start
        if na == a.text.utf8.count, nb == b.text.utf8.count {
            var ascii = true
            for k in a.start..<a.end where self.b[k] >= 0x80 { ascii = false; break }
            if ascii { for k in b.start..<b.end where self.b[k] >= 0x80 { ascii = false; break } }
            if ascii {
                let n = min(na, nb)
                for k in 0..<n {
                    let x = self.b[a.start + k], y = self.b[b.start + k]
                    if x != y { return x < y }
                }
                return na < nb
            }
        }
        return CanonicalJSON.keyPrecedes(a.text, b.text)
    }

    private mutating func array(depth: Int) throws(Error) -> JSONValue {
        guard depth <= 64 else { throw fail("nested more than 64 deep") }
        i += 1
        var items: [JSONValue] = []
        skipSpace()
        if i < end, b[i] == UInt8(ascii: "]") { i += 1; return .array(items) }
        while true {
            skipSpace()
            items.append(try value(depth: depth))
            skipSpace()
            guard i < end else { throw fail("unexpected end of input") }
            if b[i] == UInt8(ascii: ",") { i += 1; continue }
            if b[i] == UInt8(ascii: "]") { i += 1; return .array(items) }
            throw fail("expected ',' or ']'")
        }
    }

    private mutating func string() throws(Error) -> String {
        i += 1
        let start = i
        // Fast path: no escapes. ASCII (every hash, date and key) needs no UTF-8 validation.
        var high: UInt8 = 0
        while i < end {
            let c = b[i]
            if c == UInt8(ascii: "\"") {
                let bytes = UnsafeRawBufferPointer(rebasing: b[start..<i])
                i += 1
                if high < 0x80 { return String(decoding: bytes, as: UTF8.self) }
                guard let s = String(validating: bytes, as: UTF8.self) else { throw Error(offset: start, reason: "string is not valid UTF-8") }
                return s
            }
            if c == UInt8(ascii: "\\") { break }
            if c < 0x20 { throw fail("control character in a string") }
            high |= c
            i += 1
        }
        guard i < end else { throw fail("unterminated string") }
        var out = Array(UnsafeRawBufferPointer(rebasing: b[start..<i]))
        while i < end {
            let c = b[i]
            if c == UInt8(ascii: "\"") {
                guard let s = String(validating: out, as: UTF8.self) else { throw Error(offset: start, reason: "string is not valid UTF-8") }
                i += 1
                return s
            }
            if c < 0x20 { throw fail("control character in a string") }
            if c != UInt8(ascii: "\\") { out.append(c); i += 1; continue }
            i += 1
            guard i < end else { throw fail("unterminated escape") }
            let e = b[i]
            i += 1
            if canonical, e == UInt8(ascii: "/") { throw notCanonical("'\\/' escape") }
            switch e {
            case UInt8(ascii: "\""): out.append(0x22)
            case UInt8(ascii: "\\"): out.append(0x5C)
            case UInt8(ascii: "/"): out.append(0x2F)
            case UInt8(ascii: "b"): out.append(0x08)
            case UInt8(ascii: "f"): out.append(0x0C)
            case UInt8(ascii: "n"): out.append(0x0A)
            case UInt8(ascii: "r"): out.append(0x0D)
            case UInt8(ascii: "t"): out.append(0x09)
            case UInt8(ascii: "u"):
                let escapeStart = i
                var scalar = try hex4()
                if canonical {
                    // Only control characters without a short escape are written as \u00xx, lower-case.
                    let short: Set<UInt32> = [0x08, 0x09, 0x0A, 0x0C, 0x0D]
                    guard scalar < 0x20, !short.contains(scalar) else { throw notCanonical("needless \\u escape") }
                    for k in escapeStart..<i where (0x41...0x46).contains(b[k]) { throw notCanonical("upper-case hex in a \\u escape") }
                }
                if (0xD800..<0xDC00).contains(scalar) {
                    guard end - i >= 6, b[i] == UInt8(ascii: "\\"), b[i + 1] == UInt8(ascii: "u") else { throw fail("lone high surrogate") }
                    i += 2
                    let low = try hex4()
                    guard (0xDC00..<0xE000).contains(low) else { throw fail("invalid low surrogate") }
                    scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                } else if (0xDC00..<0xE000).contains(scalar) {
                    throw fail("lone low surrogate")
                }
                guard let u = Unicode.Scalar(scalar) else { throw fail("invalid unicode escape") }
                out.append(contentsOf: Array(String(Character(u)).utf8))
            default: throw fail("invalid escape")
            }
        }
        throw fail("unterminated string")
    }

    /// The value of one hex digit of a `\\uXXXX` escape (either case), nil for anything else.
    public static func hexDigit(_ c: UInt8) -> UInt32? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): UInt32(c - 0x30)
        case UInt8(ascii: "a")...UInt8(ascii: "f"): UInt32(c - 0x61 + 10)
        case UInt8(ascii: "A")...UInt8(ascii: "F"): UInt32(c - 0x41 + 10)
        default: nil
        }
    }

    private mutating func hex4() throws(Error) -> UInt32 {
        guard end - i >= 4 else { throw fail("short unicode escape") }
        var v: UInt32 = 0
        for _ in 0..<4 {
            guard let d = Self.hexDigit(b[i]) else { throw fail("invalid hex digit") }
            v = v << 4 | d
            i += 1
        }
        return v
    }

    private mutating func number() throws(Error) -> Double {
        let start = i
        var negative = false
        if b[i] == UInt8(ascii: "-") { negative = true; i += 1 }
        guard i < end, (0x30...0x39).contains(b[i]) else { throw fail("invalid number") }
        var integer: UInt64 = 0
        var digits = 0
        if b[i] == 0x30 {
            i += 1
            if i < end, (0x30...0x39).contains(b[i]) { throw fail("leading zero in a number") }
            digits = 1
        } else {
            while i < end, (0x30...0x39).contains(b[i]) {
                if digits < 18 { integer = integer * 10 + UInt64(b[i] - 0x30) }
                digits += 1
                i += 1
            }
        }
        var simple = digits <= 15
        if i < end, b[i] == UInt8(ascii: ".") {
            simple = false
            i += 1
            guard i < end, (0x30...0x39).contains(b[i]) else { throw fail("invalid fraction") }
            while i < end, (0x30...0x39).contains(b[i]) { i += 1 }
        }
        if i < end, b[i] == UInt8(ascii: "e") || b[i] == UInt8(ascii: "E") {
            simple = false
            i += 1
            if i < end, b[i] == UInt8(ascii: "+") || b[i] == UInt8(ascii: "-") { i += 1 }
            guard i < end, (0x30...0x39).contains(b[i]) else { throw fail("invalid exponent") }
            while i < end, (0x30...0x39).contains(b[i]) { i += 1 }
        }
        if simple {
            if canonical, negative, integer == 0 { throw Error(offset: start, reason: "not canonical (RFC 8785): -0") }
            let d = Double(integer)
            return negative ? -d : d
        }
        let text = String(decoding: UnsafeRawBufferPointer(rebasing: b[start..<i]), as: UTF8.self)
        guard let d = Double(text), d.isFinite else { throw Error(offset: start, reason: "number out of range") }
        if canonical {
            var w = CanonicalJSONWriter(capacity: 32)
            guard (try? w.writeNumber(d)) != nil, w.bytes.elementsEqual(UnsafeRawBufferPointer(rebasing: b[start..<i])) else {
                throw Error(offset: start, reason: "not canonical (RFC 8785): number not in ECMAScript form")
            }
        }
        return d
    }
}
