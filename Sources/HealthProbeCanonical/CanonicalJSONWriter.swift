import Foundation

/// Streaming canonical JSON writer. Callers that build objects by hand
/// (hot paths) must add keys already in canonical order; `write(_:)` sorts.
///
/// Bytes go into a buffer it owns (grown by doubling), not an `Array`: each
/// write is a capacity check and a store, without the uniqueness check an
/// array append pays per call. Not copyable; `bytes` copies the result out.
public struct CanonicalJSONWriter: ~Copyable {
    private var base: UnsafeMutablePointer<UInt8>
    private var capacity: Int
    /// Bytes written so far.
    public private(set) var count = 0

    public init(capacity: Int = 256) {
        self.capacity = Swift.max(capacity, 32)
        base = .allocate(capacity: self.capacity)
    }

    deinit { base.deallocate() }

    /// What has been written.
    public var bytes: [UInt8] { Array(UnsafeBufferPointer(start: base, count: count)) }

    /// Clears the buffer, keeping its capacity.
    public mutating func reset() {
        count = 0
        depth = 0
        hasMember = 0
    }

    @inline(__always)
    private mutating func reserve(_ n: Int) {
        if count + n > capacity { grow(count + n) }
    }

    @inline(never)
    private mutating func grow(_ needed: Int) {
        var c = capacity * 2
        while c < needed { c *= 2 }
        let b = UnsafeMutablePointer<UInt8>.allocate(capacity: c)
        b.update(from: base, count: count)
        base.deallocate()
        base = b
        capacity = c
    }

    @inline(__always)
    private mutating func put(_ b: UInt8) {
        reserve(1)
        base[count] = b
        count += 1
    }

    @inline(__always)
    private mutating func put(_ p: UnsafeRawPointer, _ n: Int) {
        reserve(n)
        (base + count).update(from: p.assumingMemoryBound(to: UInt8.self), count: n)
        count += n
    }

    /// Appends bytes that are already canonical JSON (or its punctuation).
    public mutating func appendRaw(_ b: [UInt8]) {
        b.withUnsafeBufferPointer { if let p = $0.baseAddress { put(p, $0.count) } }
    }

    /// Appends `b` as it is (for other formats sharing the buffer, like CSV rows).
    public mutating func appendRaw(_ b: UnsafeBufferPointer<UInt8>) {
        if let p = b.baseAddress { put(p, b.count) }
    }

    /// Appends one byte as it is.
    public mutating func appendRaw(_ b: UInt8) { put(b) }

    /// Appends the UTF-8 of `s` as it is.
    public mutating func appendRaw(_ s: String) {
        var s = s
        s.withUTF8 { appendRaw($0) }
    }

    /// Appends a date's canonical text without quotes.
    public mutating func appendRawDate(_ seconds: Double) {
        reserve(CanonicalDate.length)
        CanonicalDate.write(seconds, to: base + count)
        count += CanonicalDate.length
    }

    /// Calls `body` with the bytes written so far (valid only during the call).
    public func withBytes<R>(_ body: (UnsafeBufferPointer<UInt8>) throws -> R) rethrows -> R {
        try body(UnsafeBufferPointer(start: base, count: count))
    }

    public mutating func write(_ value: JSONValue) throws(HashingError) {
        switch value {
        case .null: writeNull()
        case .bool(let b): writeBool(b)
        case .number(let d): try writeNumber(d)
        case .string(let s): writeString(s)
        case .array(let items):
            put(UInt8(ascii: "["))
            for (i, item) in items.enumerated() {
                if i > 0 { put(UInt8(ascii: ",")) }
                try write(item)
            }
            put(UInt8(ascii: "]"))
        case .object(let members):
            put(UInt8(ascii: "{"))
            let keys = members.keys.sorted(by: CanonicalJSON.keyPrecedes)
            for (i, key) in keys.enumerated() {
                if i > 0 { put(UInt8(ascii: ",")) }
                writeString(key)
                put(UInt8(ascii: ":"))
                try write(members[key]!)
            }
            put(UInt8(ascii: "}"))
        }
    }

    public mutating func writeBool(_ b: Bool) {
        let text: StaticString = b ? "true" : "false"
        put(text.utf8Start, text.utf8CodeUnitCount)
    }

    public mutating func writeNumber(_ d: Double) throws(HashingError) {
        // Integral values below 2^53 print as plain integers.
        if d == d.rounded(.towardZero) && d.magnitude < 9_007_199_254_740_992 {
            writeInt(Int(d))
            return
        }
        guard ECMAScriptNumber.withFormatted(d, { put($0.baseAddress!, $0.count) }) != nil else {
            throw HashingError(code: .nonFiniteNumber, message: "a number to be hashed is NaN or infinite; canonical JSON cannot represent it")
        }
    }

    /// Writes an integer (exact for |n| < 2^53).
    public mutating func writeInt(_ n: Int) {
        if n == 0 { put(0x30); return }
        var x = n.magnitude
        reserve(21)
        if n < 0 { base[count] = UInt8(ascii: "-"); count += 1 }
        var digits = 0
        var y = x
        while y > 0 { digits += 1; y /= 10 }
        var i = count + digits
        while x > 0 { i -= 1; base[i] = 0x30 + UInt8(x % 10); x /= 10 }
        count += digits
    }

    public mutating func writeNull() {
        let text: StaticString = "null"
        put(text.utf8Start, 4)
    }

    public mutating func writeString(_ s: String) {
        var s = s
        s.withUTF8 { buf in
            if Self.isPlain(buf) {
                putQuoted(buf)
            } else {
                put(UInt8(ascii: "\""))
                appendEscaped(buf)
                put(UInt8(ascii: "\""))
            }
        }
    }

    /// Writes UTF-8 `text` as a string: what `writeString` writes for the
    /// `String` it decodes to, without building one when it is plain ASCII.
    public mutating func writeString(utf8 text: UnsafeBufferPointer<UInt8>) {
        guard Self.isPlain(text) else { return writeString(String(decoding: text, as: UTF8.self)) }
        putQuoted(text)
    }

    /// `text` (plain, see `isPlain`) between quotes, in one reservation.
    private mutating func putQuoted(_ text: UnsafeBufferPointer<UInt8>) {
        reserve(text.count + 2)
        base[count] = UInt8(ascii: "\"")
        if let p = text.baseAddress { (base + count + 1).update(from: p, count: text.count) }
        base[count + 1 + text.count] = UInt8(ascii: "\"")
        count += text.count + 2
    }

    /// True when `text` is ASCII that a JSON string holds unescaped (no control
    /// character, quote, backslash or byte over 0x7F). Eight bytes at a time.
    static func isPlain(_ text: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let base = text.baseAddress else { return true }
        let ones: UInt64 = 0x0101_0101_0101_0101, highs: UInt64 = 0x8080_8080_8080_8080
        var i = 0
        while i + 8 <= text.count {
            let w = UnsafeRawPointer(base + i).loadUnaligned(as: UInt64.self)
            // A high bit set in `w` itself, or a byte below 0x20 (w has no high bits then).
            var bad = w | ((w &- ones &* 0x20) & ~w)
            // Bytes equal to 0x22 or 0x5C: a zero byte in w ^ pattern.
            let q = w ^ (ones &* 0x22), b = w ^ (ones &* 0x5C)
            bad |= (q &- ones) & ~q
            bad |= (b &- ones) & ~b
            if bad & highs != 0 { return false }
            i += 8
        }
        while i < text.count {
            let b = base[i]
            if b < 0x20 || b == 0x22 || b == 0x5C || b >= 0x80 { return false }
            i += 1
        }
        return true
    }

    /// Writes a date as its canonical ISO 8601 string (`"2025-05-23T12:00:00.250Z"`).
    public mutating func writeDate(_ seconds: Double) {
        reserve(CanonicalDate.length + 2)
        base[count] = UInt8(ascii: "\"")
        CanonicalDate.write(seconds, to: base + count + 1)
        base[count + 1 + CanonicalDate.length] = UInt8(ascii: "\"")
        count += CanonicalDate.length + 2
    }

    private static let hexDigits: StaticString = "0123456789abcdef"

    /// Minimal escaping (RFC 8785): quote, backslash, and control characters.
    private mutating func appendEscaped(_ utf8: UnsafeBufferPointer<UInt8>) {
        for byte in utf8 {
            switch byte {
            case 0x22: put(0x5C); put(0x22)
            case 0x5C: put(0x5C); put(0x5C)
            case 0x08: put(0x5C); put(UInt8(ascii: "b"))
            case 0x09: put(0x5C); put(UInt8(ascii: "t"))
            case 0x0A: put(0x5C); put(UInt8(ascii: "n"))
            case 0x0C: put(0x5C); put(UInt8(ascii: "f"))
            case 0x0D: put(0x5C); put(UInt8(ascii: "r"))
            case 0x00..<0x20:
                put(0x5C); put(UInt8(ascii: "u")); put(0x30); put(0x30)
                put(Self.hexDigits.utf8Start[Int(byte >> 4)])
                put(Self.hexDigits.utf8Start[Int(byte & 0xF)])
            default: put(byte)
            }
        }
    }

    // Hand-built objects (keys must be given in canonical order). A bit per
    // nesting level says whether the current object already has a member.
    private var depth = 0
    private var hasMember: UInt64 = 0

    public mutating func beginObject() {
        put(UInt8(ascii: "{"))
        depth += 1
        precondition(depth < 64, "canonical JSON nested too deeply")
        hasMember &= ~(1 << UInt64(depth))
    }

    public mutating func endObject() {
        put(UInt8(ascii: "}"))
        depth -= 1
    }

    /// Writes `"key":`; the value must follow.
    public mutating func key(_ k: StaticString) {
        let bit: UInt64 = 1 << UInt64(depth)
        let n = k.utf8CodeUnitCount
        reserve(n + 4)
        if hasMember & bit != 0 { base[count] = UInt8(ascii: ","); count += 1 }
        hasMember |= bit
        base[count] = UInt8(ascii: "\"")
        (base + count + 1).update(from: k.utf8Start, count: n)
        base[count + 1 + n] = UInt8(ascii: "\"")
        base[count + 2 + n] = UInt8(ascii: ":")
        count += n + 3
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

    /// A string member holding `v` as lower-case hex digits (`nil` writes null):
    /// a stored hash written as every edge shows it, without building the text first.
    public mutating func field(_ k: StaticString, hex v: UnsafeRawBufferPointer?) {
        key(k)
        guard let v else { return writeNull() }
        reserve(v.count * 2 + 2)
        base[count] = UInt8(ascii: "\"")
        ArchiveHasher.writeHex(v, to: base + count + 1)
        base[count + 1 + v.count * 2] = UInt8(ascii: "\"")
        count += v.count * 2 + 2
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
