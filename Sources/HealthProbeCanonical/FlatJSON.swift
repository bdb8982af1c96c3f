import Foundation

/// One canonical JSON document parsed without building values: its bytes and
/// a flat table of object members (key and value byte ranges, in document
/// order), so that hot paths read fields without dictionaries or string
/// allocations. Made by `JSONParser.flat(_:)`, which validated the bytes as
/// RFC 8785 canonical JSON.
public struct FlatJSON: Sendable {
    public enum ValueType: UInt8, Sendable { case string, number, object, array, bool, null }

    /// One object member. `parent` is the index of the member whose value is the
    /// enclosing object, `-1` for the top-level object (`-2` inside arrays:
    /// not looked up by key).
    struct Member: Sendable {
        var parent: Int32
        var keyStart: Int32, keyEnd: Int32
        var valueStart: Int32, valueEnd: Int32
        var type: ValueType
        /// A string value without escapes: its bytes between the quotes are its UTF-8.
        var plain: Bool
        var number: Double
    }

    /// A parent index no member has: lookups in it find nothing (for an absent object).
    public static let nowhere: Int32 = -3

    /// The document's bytes.
    public let bytes: [UInt8]
    let members: [Member]
    /// Whether the document is an object (members with parent `-1` are its own).
    public let isObject: Bool

    init(bytes: [UInt8], members: [Member], isObject: Bool) {
        self.bytes = bytes
        self.members = members
        self.isObject = isObject
    }

    /// The document as a `JSONValue` (parses it again; for rare lines and tests).
    public var value: JSONValue {
        // The bytes were validated when this value was made.
        (try? JSONParser.parse(bytes, canonical: true)) ?? .null
    }

    /// The index of member `key` of the object at `parent` (`-1`: the top level).
    public func find(_ key: StaticString, in parent: Int32 = -1) -> Int32? {
        find(key, in: parent, from: 0)
    }

    /// `find(_:in:)` starting at member `start` (outside the members: at the first) and going
    /// round: members read in their order are found at once.
    public func find(_ key: StaticString, in parent: Int32 = -1, from start: Int32) -> Int32? {
        let n = key.utf8CodeUnitCount
        let count = members.count
        let first = start >= 0 && Int(start) < count ? Int(start) : 0
        return bytes.withUnsafeBufferPointer { buf -> Int32? in
            members.withUnsafeBufferPointer { m -> Int32? in
                var k = first
                for _ in 0..<count {
                    let member = m[k]
                    if member.parent == parent, Int(member.keyEnd - member.keyStart) == n,
                       memcmp(buf.baseAddress! + Int(member.keyStart), key.utf8Start, n) == 0 { return Int32(k) }
                    k += 1
                    if k == count { k = 0 }
                }
                return nil
            }
        }
    }

    /// The type of member `index`.
    public func type(_ index: Int32) -> ValueType { members[Int(index)].type }

    /// The byte range of member `index`'s value (for an object or array, its canonical encoding).
    public func valueRange(_ index: Int32) -> Range<Int> {
        let m = members[Int(index)]
        return Int(m.valueStart)..<Int(m.valueEnd)
    }

    /// The string value of `key` (nil when absent or not a string).
    public func string(_ key: StaticString, in parent: Int32 = -1) -> String? {
        find(key, in: parent).flatMap(string(at:))
    }

    /// The string value of member `index` (nil when not a string).
    public func string(at index: Int32) -> String? {
        let m = members[Int(index)]
        guard m.type == .string else { return nil }
        if m.plain {
            return bytes.withUnsafeBufferPointer { String(decoding: UnsafeBufferPointer(rebasing: $0[Int(m.valueStart) + 1..<Int(m.valueEnd) - 1]), as: UTF8.self) }
        }
        guard case .string(let s)? = try? JSONParser.parse(bytes[Int(m.valueStart)..<Int(m.valueEnd)]) else { return nil }
        return s
    }

    /// The UTF-8 bytes of a string member without escapes, between its quotes (nil otherwise).
    public func plainRange(_ index: Int32) -> Range<Int>? {
        let m = members[Int(index)]
        guard m.type == .string, m.plain else { return nil }
        return Int(m.valueStart) + 1..<Int(m.valueEnd) - 1
    }

    /// The number value of `key` (nil when absent or not a number).
    public func number(_ key: StaticString, in parent: Int32 = -1) -> Double? {
        guard let i = find(key, in: parent), members[Int(i)].type == .number else { return nil }
        return members[Int(i)].number
    }

    /// The index of the object value of `key` (nil when absent or not an object).
    public func object(_ key: StaticString, in parent: Int32 = -1) -> Int32? {
        guard let i = find(key, in: parent), members[Int(i)].type == .object else { return nil }
        return i
    }

    /// The canonical date string of `key` as Unix seconds (nil when absent or not a date).
    public func date(_ key: StaticString, in parent: Int32 = -1) -> Double? {
        guard let i = find(key, in: parent), let r = plainRange(i) else { return nil }
        return bytes.withUnsafeBufferPointer { CanonicalDate.parse(bytes: UnsafeBufferPointer(rebasing: $0[r])) }
    }

    /// The number of members in the document (at every depth).
    public var memberCount: Int { members.count }

    /// The parent of member `index` (`-1`: the top-level object).
    public func parent(_ index: Int32) -> Int32 { members[Int(index)].parent }

    /// The UTF-8 bytes of member `index`'s key (keys of canonical items have no escapes).
    public func keyRange(_ index: Int32) -> Range<Int> {
        let m = members[Int(index)]
        return Int(m.keyStart)..<Int(m.keyEnd)
    }

    /// The number value of member `index` (meaningful when its type is `.number`).
    public func number(at index: Int32) -> Double { members[Int(index)].number }

    /// Whether the string member `index` equals `text` byte for byte.
    public func stringEquals(_ index: Int32, _ text: StaticString) -> Bool {
        guard let r = plainRange(index), r.count == text.utf8CodeUnitCount else { return false }
        return bytes.withUnsafeBufferPointer { memcmp($0.baseAddress! + r.lowerBound, text.utf8Start, r.count) == 0 }
    }
}
