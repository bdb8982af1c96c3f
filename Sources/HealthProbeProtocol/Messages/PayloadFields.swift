import HealthProbeCanonical

/// The members of one frame's JSON payload, read only through checked accessors:
/// the payload must be canonical JSON (RFC 8785) holding an object with exactly the
/// documented members; numbers must be exact integers inside their documented range
/// before any conversion; dates canonical text inside `SyncLimits.dates`. Any
/// failure is `malformed_frame` naming the frame and the member. Nothing here traps.
struct PayloadFields {
    let frame: String
    private let members: [String: JSONValue]

    /// Parses `frame`'s payload; `members` are the names it must hold, no more, no fewer.
    init(_ frame: SyncFrame, name: String, members expected: Set<String>) throws {
        self.frame = name
        let value: JSONValue
        do { value = try JSONParser.parse(frame.payload.readableBytesView, canonical: true) } catch {
            throw SyncProtocolError(.malformedFrame, "\(name): the payload is not canonical JSON (RFC 8785)")
        }
        guard case .object(let o) = value else { throw SyncProtocolError(.malformedFrame, "\(name): the payload is not a JSON object") }
        let names = Set(o.keys)
        if let missing = expected.subtracting(names).sorted().first {
            throw SyncProtocolError(.malformedFrame, "\(name): member \(missing) is missing")
        }
        if let extra = names.subtracting(expected).sorted().first {
            throw SyncProtocolError(.malformedFrame, "\(name): unknown member \(Self.printable(extra))")
        }
        members = o
    }

    func fail(_ member: String, _ why: String) -> SyncProtocolError {
        SyncProtocolError(.malformedFrame, "\(frame).\(member): \(why)")
    }

    /// An exact integer in `range` (a JSON number with no fraction; checked before converting).
    func int(_ member: String, in range: ClosedRange<Int64>) throws -> Int64 {
        guard case .number(let d)? = members[member] else { throw fail(member, "must be an integer") }
        // Compare as doubles first: converting 2^63 or 1e300 to an integer would trap.
        guard d.isFinite, d == d.rounded(.towardZero), d >= Double(range.lowerBound), d <= Double(range.upperBound) else {
            throw fail(member, "must be an integer in \(range.lowerBound)...\(range.upperBound)")
        }
        let v = Int64(exactly: d)
        guard let v, range.contains(v) else { throw fail(member, "must be an integer in \(range.lowerBound)...\(range.upperBound)") }
        return v
    }

    /// A string of at most `maxLength` UTF-8 bytes.
    func string(_ member: String, maxLength: Int = SyncLimits.maxStringBytes) throws -> String {
        guard case .string(let s)? = members[member] else { throw fail(member, "must be a string") }
        guard s.utf8.count <= maxLength else { throw fail(member, "longer than \(maxLength) bytes") }
        return s
    }

    /// A string or null.
    func optionalString(_ member: String, maxLength: Int = SyncLimits.maxStringBytes) throws -> String? {
        if case .null? = members[member] { return nil }
        return try string(member, maxLength: maxLength)
    }

    /// Exactly `count` lower-case hex digits.
    func hex(_ member: String, count: Int) throws -> String {
        let s = try string(member)
        guard ArchiveHasher.isLowerHex(s.utf8, count: count) else {
            throw fail(member, "must be \(count) lower-case hex digits")
        }
        return s
    }

    /// A canonical date (`YYYY-MM-DDTHH:MM:SS.sssZ`) inside `SyncLimits.dates`, as Unix seconds.
    func date(_ member: String) throws -> Double {
        let s = try string(member, maxLength: CanonicalDate.length)
        guard let t = CanonicalDate.parse(s), CanonicalDate.string(t) == s else {
            throw fail(member, "must be a canonical UTC date like 2025-01-31T12:00:00.000Z")
        }
        guard SyncLimits.dates.contains(t) else {
            throw fail(member, "must lie in \(CanonicalDate.string(SyncLimits.dates.lowerBound))...\(CanonicalDate.string(SyncLimits.dates.upperBound))")
        }
        return t
    }

    /// A canonical date or null.
    func optionalDate(_ member: String) throws -> Double? {
        if case .null? = members[member] { return nil }
        return try date(member)
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
    /// Parts of one bundle.
    public static let parts: ClosedRange<Int64> = 1...1_000_000
    /// Items of one bundle.
    public static let items: ClosedRange<Int64> = 0...9_007_199_254_740_991
    /// A bundle's total uncompressed size: at most 1,000,000 parts of 8 MiB.
    public static let uncompressedSize: ClosedRange<Int64> = 1...(1_000_000 * 8 * 1024 * 1024)
    /// Dates on the wire: from 2000-01-01 up to (not including) 2100-01-01 UTC.
    public static let dates: Range<Double> = 946_684_800..<4_102_444_800
    /// Any string member (names, secrets, type identifiers).
    public static let maxStringBytes = 1024
}
