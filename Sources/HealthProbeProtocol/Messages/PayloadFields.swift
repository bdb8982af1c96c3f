import HealthProbeCanonical

/// The members of one frame's JSON payload (or of an object inside it), read only
/// through checked accessors: the payload must be canonical JSON (RFC 8785; the
/// `HOUSEHOLD` reply plain JSON) holding an object with exactly the documented
/// members; numbers must be exact integers inside their documented range before
/// any conversion; dates canonical text inside `SyncLimits.dates`. Any failure is
/// `malformed_frame` naming the frame and the member. Nothing here traps.
struct PayloadFields {
    let frame: String
    private let members: [String: JSONValue]

    /// Parses `frame`'s payload; `members` are the names it must hold, no more, no fewer
    /// (`optional` ones may also be absent). `canonical: false` accepts any RFC 8259 form
    /// (the `HOUSEHOLD` reply alone).
    init(_ frame: SyncFrame, name: String, members expected: Set<String>, optional: Set<String> = [], canonical: Bool = true) throws {
        let value: JSONValue
        do { value = try JSONParser.parse(frame.payload.readableBytesView, canonical: canonical) } catch {
            throw SyncProtocolError(.malformedFrame, canonical ? "\(name): the payload is not canonical JSON (RFC 8785)" : "\(name): the payload is not JSON (\(error))")
        }
        guard case .object = value else { throw SyncProtocolError(.malformedFrame, "\(name): the payload is not a JSON object") }
        try self.init(value, name: name, members: expected, optional: optional)
    }

    /// The members of a JSON object inside a payload, named `name` in errors
    /// (`HOUSEHOLD.chains[3]`); as above, exactly `members`, `optional` ones possibly absent.
    init(_ value: JSONValue, name: String, members expected: Set<String>, optional: Set<String> = []) throws {
        frame = name
        guard case .object(let o) = value else { throw SyncProtocolError(.malformedFrame, "\(name): must be a JSON object") }
        let names = Set(o.keys)
        if let missing = expected.subtracting(optional).subtracting(names).sorted().first {
            throw SyncProtocolError(.malformedFrame, "\(name): member \(missing) is missing")
        }
        if let extra = names.subtracting(expected).sorted().first {
            throw SyncProtocolError(.malformedFrame, "\(name): unknown member \(Self.printable(extra))")
        }
        members = o
    }

    /// Whether `member` is present (null included).
    func has(_ member: String) -> Bool { members[member] != nil }

    /// Whether `member` is null or absent.
    func isNull(_ member: String) -> Bool {
        switch members[member] {
        case nil, .null?: return true
        default: return false
        }
    }

    func fail(_ member: String, _ why: String) -> SyncProtocolError {
        SyncProtocolError(.malformedFrame, "\(frame).\(member): \(why)")
    }

    /// An exact integer in `range` (a JSON number with no fraction; checked before converting).
    func int(_ member: String, in range: ClosedRange<Int64>) throws -> Int64 {
        guard case .number(let d)? = members[member] else { throw fail(member, "must be an integer") }
        guard let v = Self.exactInteger(d, in: range) else {
            throw fail(member, "must be an integer in \(range.lowerBound)...\(range.upperBound)")
        }
        return v
    }

    /// An integer in `range`, or null (or absent, when optional).
    func optionalInt(_ member: String, in range: ClosedRange<Int64>) throws -> Int64? {
        isNull(member) ? nil : try int(member, in: range)
    }

    /// `d` as an integer when it is one and lies in `range`; compared as doubles first:
    /// converting 2^63 or 1e300 to an integer would trap.
    static func exactInteger(_ d: Double, in range: ClosedRange<Int64>) -> Int64? {
        guard d.isFinite, d == d.rounded(.towardZero), d >= Double(range.lowerBound), d <= Double(range.upperBound) else { return nil }
        guard let v = Int64(exactly: d), range.contains(v) else { return nil }
        return v
    }

    /// A finite number in `range`.
    func number(_ member: String, in range: ClosedRange<Double>) throws -> Double {
        guard case .number(let d)? = members[member] else { throw fail(member, "must be a number") }
        guard d.isFinite, range.contains(d) else { throw fail(member, "must be a number in \(range.lowerBound)...\(range.upperBound)") }
        return d
    }

    /// A number in `range`, or null (or absent, when optional).
    func optionalNumber(_ member: String, in range: ClosedRange<Double>) throws -> Double? {
        isNull(member) ? nil : try number(member, in: range)
    }

    /// Unix seconds (a JSON number) inside `range`.
    func seconds(_ member: String, in range: Range<Double>) throws -> Double {
        guard case .number(let d)? = members[member] else { throw fail(member, "must be a number (Unix seconds)") }
        guard d.isFinite, range.contains(d) else {
            throw fail(member, "must be Unix seconds in \(CanonicalDate.string(range.lowerBound))..<\(CanonicalDate.string(range.upperBound))")
        }
        return d
    }

    /// Unix seconds inside `range`, or null (or absent, when optional).
    func optionalSeconds(_ member: String, in range: Range<Double>) throws -> Double? {
        isNull(member) ? nil : try seconds(member, in: range)
    }

    /// true or false.
    func bool(_ member: String) throws -> Bool {
        guard case .bool(let b)? = members[member] else { throw fail(member, "must be true or false") }
        return b
    }

    /// An array of at most `maxCount` elements.
    func array(_ member: String, maxCount: Int) throws -> [JSONValue] {
        guard case .array(let a)? = members[member] else { throw fail(member, "must be an array") }
        guard a.count <= maxCount else { throw fail(member, "holds \(a.count) elements, more than \(maxCount)") }
        return a
    }

    /// An object of at most `maxCount` members.
    func object(_ member: String, maxCount: Int) throws -> [String: JSONValue] {
        guard case .object(let o)? = members[member] else { throw fail(member, "must be a JSON object") }
        guard o.count <= maxCount else { throw fail(member, "holds \(o.count) members, more than \(maxCount)") }
        return o
    }

    /// One of the strings in `allowed`.
    func oneOf(_ member: String, _ allowed: [String]) throws -> String {
        let s = try string(member)
        guard allowed.contains(s) else { throw fail(member, "must be one of \(allowed.joined(separator: ", ")), not \(Self.printable(s))") }
        return s
    }

    /// A string of at most `maxLength` UTF-8 bytes.
    func string(_ member: String, maxLength: Int = SyncLimits.maxStringBytes) throws -> String {
        guard case .string(let s)? = members[member] else { throw fail(member, "must be a string") }
        guard s.utf8.count <= maxLength else { throw fail(member, "longer than \(maxLength) bytes") }
        return s
    }

    /// A string, or null (or absent, when optional).
    func optionalString(_ member: String, maxLength: Int = SyncLimits.maxStringBytes) throws -> String? {
        isNull(member) ? nil : try string(member, maxLength: maxLength)
    }

    /// Exactly `count` lower-case hex digits.
    func hex(_ member: String, count: Int) throws -> String {
        let s = try string(member)
        guard ArchiveHasher.isLowerHex(s.utf8, count: count) else {
            throw fail(member, "must be \(count) lower-case hex digits")
        }
        return s
    }

    /// Lower-case hex of `count` digits, or null (or absent, when optional).
    func optionalHex(_ member: String, count: Int) throws -> String? {
        isNull(member) ? nil : try hex(member, count: count)
    }

    /// A canonical date (`YYYY-MM-DDTHH:MM:SS.sssZ`) inside `SyncLimits.dates`, as Unix seconds.
    func date(_ member: String) throws -> Double {
        let s = try string(member, maxLength: CanonicalDate.length)
        guard let t = CanonicalDate.parse(s) else {
            throw fail(member, "must be a canonical UTC date like 2025-01-31T12:00:00.000Z")
        }
        // The range before the text is written again: a date text with an offset may name an
        // instant before year 0000 (`0000-01-01T00:00:00+0100`), which no canonical text holds.
        guard SyncLimits.dates.contains(t) else {
            throw fail(member, "must lie in \(CanonicalDate.string(SyncLimits.dates.lowerBound))...\(CanonicalDate.string(SyncLimits.dates.upperBound))")
        }
        guard CanonicalDate.string(t) == s else {
            throw fail(member, "must be a canonical UTC date like 2025-01-31T12:00:00.000Z")
        }
        return t
    }

    /// A canonical date, or null (or absent, when optional).
    func optionalDate(_ member: String) throws -> Double? {
        isNull(member) ? nil : try date(member)
    }

    /// A member name safe to repeat in an error (bounded, printable ASCII).
    static func printable(_ s: String) -> String {
        let clean = String(String.UnicodeScalarView(s.unicodeScalars.prefix(40).map { $0.isASCII && $0.value >= 0x20 && $0.value < 0x7F ? $0 : "?" }))
        return "\"" + clean + "\""
    }
}

/// The documented ranges of the protocol's numbers, dates and strings (Protocol/README.md section 2).
public enum SyncLimits {
    /// Bundle sequences: 1 up to the largest integer every JSON reader holds exactly.
    public static let sequences: ClosedRange<Int64> = 1...9_007_199_254_740_991
    /// `CHAIN_STATUS.last_sequence`: 0 (no bundle yet) or a sequence.
    public static let chainPositions: ClosedRange<Int64> = 0...9_007_199_254_740_991
    /// Counts in replies (records, fingerprints).
    public static let counts: ClosedRange<Int64> = 0...9_007_199_254_740_991
    /// Parts of one bundle.
    public static let parts: ClosedRange<Int64> = 1...1_000_000
    /// Items of one bundle.
    public static let items: ClosedRange<Int64> = 0...9_007_199_254_740_991
    /// A bundle's total uncompressed size: at most 1,000,000 parts of 8 MiB.
    public static let uncompressedSize: ClosedRange<Int64> = 1...(1_000_000 * 8 * 1024 * 1024)
    /// Dates on the wire: from 2000-01-01 up to (not including) 2100-01-01 UTC.
    public static let dates: Range<Double> = 946_684_800..<4_102_444_800
    /// Dates (Unix seconds) in the `HOUSEHOLD` reply: from 1800-01-01 up to (not including)
    /// 2300-01-01 UTC, wider than bundle item dates (1900 to 2200) so that their local days fit.
    public static let householdDates: Range<Double> = -5_364_662_400..<10_413_792_000
    /// Clock offsets in the `HOUSEHOLD` reply: at most 100 years (of 365.25 days) either way.
    public static let clockOffsets: ClosedRange<Double> = -3_155_760_000...3_155_760_000
    /// Any string member (names, secrets, type identifiers).
    public static let maxStringBytes = 1024
    /// A device name.
    public static let maxDeviceNameBytes = 128
    /// A type identifier (`HOUSEHOLD_REQUEST.type`, the `HOUSEHOLD` reply's types).
    public static let maxTypeBytes = 256
    /// Characters of a server's `ERROR` message a client shows (the rest is cut).
    public static let maxShownMessage = 1000
}
