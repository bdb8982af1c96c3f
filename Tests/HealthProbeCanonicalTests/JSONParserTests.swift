import Foundation
import Testing
@testable import HealthProbeCanonical
import HealthProbeTestBasics

@Suite("JSON parser")
struct JSONParserTests {
    /// The parser agrees with Foundation's decoder on every canonical-JSON vector input,
    /// and its canonical mode accepts exactly the canonical texts.
    @Test func agreesWithFoundationOnVectors() throws {
        let vectors = try HashVectors.load()
        for c in vectors.canonicalJson {
            let ours = try JSONParser.parse(Array(c.input.utf8))
            let foundation = try JSONDecoder().decode(JSONValue.self, from: Data(c.input.utf8))
            #expect(ours == foundation, "\(c.name)")
            #expect(try CanonicalJSON.string(ours) == c.canonical, "\(c.name)")
            #expect((try? JSONParser.parse(Array(c.canonical.utf8), canonical: true)) != nil, "\(c.name): canonical text refused")
            if c.input != c.canonical {
                #expect((try? JSONParser.parse(Array(c.input.utf8), canonical: true)) == nil, "\(c.name): non-canonical input accepted")
            }
        }
    }

    @Test(arguments: [
        "", "{", "[1,]", "{\"a\":1,}", "{\"a\" 1}", "01", "1.", ".5", "1e", "-", "tru", "nul", "\"abc", "\"\\x\"",
        "\"\\u12\"", "\"\\ud800\"", "\"\\udc00\"", "{\"a\":1,\"a\":2}", "1 2", "\"\u{01}\"", "[1]x", "NaN", "1e999",
    ])
    func refusesInvalid(_ text: String) {
        #expect(throws: JSONParser.Error.self) { try JSONParser.parse(Array(text.utf8)) }
    }

    @Test func refusesInvalidUTF8AndDeepNesting() {
        #expect(throws: JSONParser.Error.self) { try JSONParser.parse([0x22, 0xFF, 0xFE, 0x22]) }
        let deep = String(repeating: "[", count: 65) + String(repeating: "]", count: 65)
        #expect(throws: JSONParser.Error.self) { try JSONParser.parse(deep) }
        let ok = String(repeating: "[", count: 64) + String(repeating: "]", count: 64)
        #expect((try? JSONParser.parse(ok)) != nil)
    }

    @Test(arguments: [
        "{\"b\":1,\"a\":2}", "{ \"a\":1}", "[1, 2]", "1.0", "1e2", "-0", "\"\\/\"", "\"\\u0041\"", "\"\\u000a\"", "\"\\u001F\"",
        "0.10", "1E2", "{\"a\":1} ",
        "{\"\u{e000}\":1,\"\u{1F600}\":2}",  // UTF-8 order, not UTF-16 order
    ])
    func canonicalModeRefusesOtherForms(_ text: String) throws {
        #expect((try? JSONParser.parse(Array(text.utf8))) != nil, "valid JSON")
        #expect(throws: JSONParser.Error.self) { try JSONParser.parse(Array(text.utf8), canonical: true) }
        #expect(throws: JSONParser.Error.self) { try JSONParser.flat(Array(text.utf8)) }
    }

    @Test(arguments: ["{\"a\":1,\"b\":[true,false,null]}", "\"\\u001f\\n\\\"\\\\\"", "1.5", "-3", "1e+21", "0.000001", "1e-7",
                      "{\"\u{1F600}\":2,\"\u{e000}\":1}", "\"é\""])
    func canonicalModeAcceptsCanonical(_ text: String) throws {
        let v = try JSONParser.parse(Array(text.utf8), canonical: true)
        #expect(try CanonicalJSON.string(v) == text)
        #expect(try JSONParser.flat(Array(text.utf8)).value == v)
    }

    /// Flat parsing finds the same fields as the dictionary: strings, numbers, dates,
    /// nested objects, and an object's bytes are that value's canonical encoding.
    @Test func flatMembersMatchTheValue() throws {
        let lines = try vectorLines(vectorURL("bundles/observation-1.jsonl"))
        var versions = 0
        for l in lines {
            let flat = try JSONParser.flat(l)
            guard case .object(let o) = try JSONParser.parse(l, canonical: true) else { Issue.record("not an object"); continue }
            #expect(flat.isObject && flat.bytes == l)
            #expect(flat.string("kind") == { if case .string(let k)? = o["kind"] { return k }; return nil }())
            if case .number(let n)? = o["sequence"] { #expect(flat.number("sequence") == n) }
            if case .string(let d)? = o["observed_at"] { #expect(flat.date("observed_at") == CanonicalDate.parse(d)) }
            if case .object(let ref)? = o["sample"], case .string(let type)? = ref["type"] {
                #expect(flat.string("type", in: try #require(flat.object("sample"))) == type)
                #expect(flat.string("type") == nil, "a nested member is not a top-level one")
            }
            guard let payload = o["payload"] else { #expect(flat.object("payload") == nil); continue }
            versions += 1
            let index = try #require(flat.object("payload"))
            #expect(Array(l[flat.valueRange(index)]) == (try CanonicalJSON.encode(payload)))
        }
        #expect(versions > 0)
        let nested = try JSONParser.flat(Array(#"{"a":{"payload":1},"b":[{"payload":2}],"c":"x\ny"}"#.utf8))
        #expect(nested.find("payload") == nil)
        #expect(nested.number("payload", in: try #require(nested.object("a"))) == 1)
        #expect(nested.type(try #require(nested.find("b"))) == .array)
        #expect(nested.string("c") == "x\ny", "escapes are decoded")
        #expect(nested.plainRange(try #require(nested.find("c"))) == nil, "a string with escapes is not bound by its bytes")
        #expect(nested.string("nope", in: FlatJSON.nowhere) == nil)
    }

    /// Flat parsing reads plain string bytes several at a time: each kind of byte that ends
    /// that (a quote, a backslash, a control character, non-ASCII) at every position of
    /// strings of every length up to 24 gives what the byte-by-byte decoder gives.
    @Test func flatStringsAtEveryPosition() throws {
        let specials: [[UInt8]] = [[0x00], [0x01], [0x1F], [0x20], [0x21], [0x22], [0x5C, 0x6E], [0x5C, 0x22], [0x5C], [0x7F], [0x80], [0xC3, 0xA9], [0xE2, 0x82, 0xAC]]
        var accepted = 0
        for length in 0...24 {
            for position in 0...length {
                for special in specials {
                    var text = Array(String(repeating: "a", count: length).utf8)
                    text.insert(contentsOf: special, at: position)
                    let line = Array(#"{"k":""#.utf8) + text + Array(#"","z":1}"#.utf8)
                    let strict = try? JSONParser.parse(line, canonical: true)
                    let flat = try? JSONParser.flat(line)
                    #expect((strict != nil) == (flat != nil), "length \(length), byte \(special) at \(position)")
                    guard let flat, case .object(let o)? = strict, case .string(let k)? = o["k"] else { continue }
                    accepted += 1
                    let index = try #require(flat.find("k"))
                    #expect(flat.string(at: index) == k)
                    #expect(flat.number("z") == 1)
                    #expect((flat.plainRange(index) != nil) == !special.contains(0x5C))
                }
            }
        }
        #expect(accepted > 1000)
    }

    /// Canonical mode accepts a text exactly when re-encoding its value gives the same bytes:
    /// checked on random mutations of real bundle lines.
    @Test func canonicalModeMatchesReencodingOnMutations() throws {
        var rng = TestRandom(seed: 7)
        let dir = vectorURL("bundles")
        let files = try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.hasSuffix(".jsonl") }.sorted()
        var lines: [[UInt8]] = []
        for f in files { lines += try vectorLines(dir.appendingPathComponent(f)) }
        #expect(lines.count > 10)
        let alphabet = Array("{}[]\",:.-+eE0123456789 \\/untrfalsebu\u{7F}".utf8) + [0xC3, 0xA9]
        var checked = 0, accepted = 0
        for _ in 0..<20_000 {
            var l = lines[Int(rng.next() % UInt64(lines.count))]
            let edits = 1 + Int(rng.next() % 3)
            for _ in 0..<edits where !l.isEmpty {
                let at = Int(rng.next() % UInt64(l.count))
                switch rng.next() % 3 {
                case 0: l[at] = alphabet[Int(rng.next() % UInt64(alphabet.count))]
                case 1: l.remove(at: at)
                default: l.insert(alphabet[Int(rng.next() % UInt64(alphabet.count))], at: at)
                }
            }
            let strict = try? JSONParser.parse(l, canonical: true)
            let reencoded = (try? JSONParser.parse(l)).flatMap { try? CanonicalJSON.encode($0) }
            #expect((strict != nil) == (reencoded == l), "mutated line: \(String(decoding: l, as: UTF8.self))")
            #expect((strict != nil) == ((try? JSONParser.flat(l)) != nil), "flat and canonical parsing disagree: \(String(decoding: l, as: UTF8.self))")
            checked += 1
            if strict != nil { accepted += 1 }
        }
        #expect(checked == 20_000)
        #expect(accepted > 100, "the mutations should leave some canonical lines")
    }
}

/// The lines of a small vector file, without their newlines.
func vectorLines(_ url: URL) throws -> [[UInt8]] {
    try Data(contentsOf: url).split(separator: 0x0A, omittingEmptySubsequences: true).map { Array($0) }
}
