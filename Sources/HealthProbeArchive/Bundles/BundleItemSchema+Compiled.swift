import Foundation
import HealthProbeCanonical

extension BundleItemSchema {
    /// Every kind's members (`Field`s and their `Rule`s) as one table of plain values, so
    /// that checking a line reads them by index, with no reference counting, copies of
    /// names or building of member paths unless a check fails. An object's members are
    /// consecutive rows, in canonical key order.
    struct Compiled: Sendable {
        enum Op: UInt8, Sendable { case string, hex, date, int, number, oneOf, base64, jsonObject, object, literal }

        /// Consecutive rows of `checks` (an object's members), or of `choices`.
        struct Span: Sendable {
            var start: Int
            var count: Int
        }

        /// One member.
        struct Check: Sendable {
            /// The member's name: `keyCount` bytes of `keys` from `keyStart`.
            var keyStart: Int
            var keyCount: Int
            var op: Op
            var nullable: Bool
            /// Longest text (`string`, `base64`, `jsonObject`).
            var max: Int
            /// An integer's range, and the same as doubles (numbers are compared as doubles).
            var low: Int64, high: Int64
            var lowDouble: Double, highDouble: Double
            /// An object's members (rows of `checks`) or the values of a `oneOf` (rows of `choices`).
            var children: Span
            /// The row of the object this member belongs to; -1 at the top level.
            var owner: Int
        }

        private(set) var checks: [Check] = []
        /// Member names and `oneOf` values, one after another.
        private(set) var keys: [UInt8] = []
        /// Each `oneOf` value: a span of `keys`.
        private(set) var choices: [Span] = []
        /// Each row's member name (for messages only).
        private(set) var names: [String] = []
        /// Each kind's members, by `BundleItemKind.order`.
        private(set) var kinds: [Span] = []

        init(_ fieldsByKind: [[Field]]) {
            for fields in fieldsByKind { kinds.append(add(fields, owner: -1)) }
        }

        /// Rows for `fields`, made consecutive first, then each filled (and its own members added after).
        private mutating func add(_ fields: [Field], owner: Int) -> Span {
            let span = Span(start: checks.count, count: fields.count)
            let blank = Check(keyStart: 0, keyCount: 0, op: .literal, nullable: false, max: 0, low: 0, high: 0, lowDouble: 0, highDouble: 0,
                              children: Span(start: 0, count: 0), owner: owner)
            checks.append(contentsOf: repeatElement(blank, count: fields.count))
            names.append(contentsOf: fields.map(\.name))
            for (k, field) in fields.enumerated() { fill(span.start + k, field) }
            return span
        }

        private mutating func keySpan(_ bytes: [UInt8]) -> Span {
            let span = Span(start: keys.count, count: bytes.count)
            keys.append(contentsOf: bytes)
            return span
        }

        private mutating func fill(_ row: Int, _ field: Field) {
            let key = keySpan(field.key)
            checks[row].keyStart = key.start
            checks[row].keyCount = key.count
            var rule = field.rule
            while case .nullable(let inner) = rule {
                checks[row].nullable = true
                rule = inner
            }
            switch rule {
            case .string(let max): (checks[row].op, checks[row].max) = (.string, max)
            case .hex: checks[row].op = .hex
            case .date: checks[row].op = .date
            case .int(let range):
                checks[row].op = .int
                (checks[row].low, checks[row].high) = (range.lowerBound, range.upperBound)
                (checks[row].lowDouble, checks[row].highDouble) = (Double(range.lowerBound), Double(range.upperBound))
            case .number: checks[row].op = .number
            case .oneOf(let values):
                checks[row].op = .oneOf
                checks[row].children = Span(start: choices.count, count: values.count)
                for value in values { choices.append(keySpan(value)) }
            case .base64(let max): (checks[row].op, checks[row].max) = (.base64, max)
            case .jsonObject(let max): (checks[row].op, checks[row].max) = (.jsonObject, max)
            case .object(let fields):
                checks[row].op = .object
                checks[row].children = add(fields, owner: row)
            case .literal: checks[row].op = .literal
            case .nullable: preconditionFailure("unwrapped above")
            }
        }

        /// Whether `bytes[range]` equals the `count` bytes of `keys` from `start`.
        func equals(_ bytes: [UInt8], _ range: Range<Int>, _ start: Int, _ count: Int) -> Bool {
            guard range.count == count, range.lowerBound >= 0, range.upperBound <= bytes.count else { return false }
            if count == 0 { return true }
            return bytes.withUnsafeBufferPointer { b in
                keys.withUnsafeBufferPointer { k in memcmp(b.baseAddress! + range.lowerBound, k.baseAddress! + start, count) == 0 }
            }
        }

        /// The member path of row `row` for messages (`version.payload.source.name_hash`).
        func path(_ row: Int, kind: BundleItemKind) -> String {
            var parts: [String] = []
            var r = row
            while r >= 0 {
                parts.append(names[r])
                r = checks[r].owner
            }
            return ([kind.rawValue] + parts.reversed()).joined(separator: ".")
        }

        /// The values a `oneOf` row allows, for messages.
        func choiceText(_ row: Int) -> String {
            let span = checks[row].children
            return choices[span.start ..< span.start + span.count]
                .map { String(decoding: keys[$0.start ..< $0.start + $0.count], as: UTF8.self) }.joined(separator: ", ")
        }
    }

    /// The table every line is checked against.
    static let compiled = Compiled(fieldsByKind)
}
