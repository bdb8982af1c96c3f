import Foundation
import Testing
@testable import HealthProbeCanonical
import HealthProbeTestBasics

@Suite("Hash vectors (Protocol/vectors/hashing.json)")
struct HashVectorTests {
    let v: HashVectors
    init() throws { v = try HashVectors.load() }

    @Test("numbers print as ECMAScript prints them")
    func numbers() throws {
        #expect(v.numbers.count >= 24)
        for c in v.numbers {
            let d = Double(bitPattern: UInt64(c.bits, radix: 16)!)
            #expect(ECMAScriptNumber.format(d) == c.canonical, "bits \(c.bits)")
        }
        #expect(ECMAScriptNumber.format(.nan) == nil)
        #expect(ECMAScriptNumber.format(.infinity) == nil)
    }

    @Test("documents canonicalize per RFC 8785")
    func canonicalJSON() throws {
        #expect(v.canonicalJson.count >= 4)
        for c in v.canonicalJson {
            let value = try JSONDecoder().decode(JSONValue.self, from: Data(c.input.utf8))
            #expect(try CanonicalJSON.string(value) == c.canonical, "case \(c.name)")
        }
    }

    @Test("dates print as ISO 8601 UTC with milliseconds and parse back")
    func dates() {
        #expect(v.dates.count >= 7)
        for c in v.dates {
            #expect(CanonicalDate.string(c.unixSeconds) == c.canonical, "t=\(c.unixSeconds)")
            #expect(CanonicalDate.parse(c.canonical) == CanonicalDate.normalize(c.unixSeconds))
        }
        #expect(CanonicalDate.parse("2024-03-10 08:15:00 -0500") == CanonicalDate.parse("2024-03-10T13:15:00.000Z"))
        #expect(CanonicalDate.parse("2024-13-10T00:00:00Z") == nil)
        #expect(CanonicalDate.parse("not a date") == nil)
    }

    @Test("domain-prefixed SHA-256 and HMAC-SHA256")
    func hashes() throws {
        #expect(v.sha256.count >= 3 && v.hmac.count >= 3)
        for c in v.sha256 {
            #expect(ArchiveHasher.sha256(HashDomain(rawValue: c.domain)!, c.input) == c.hex)
        }
        for c in v.hmac {
            let hasher = ArchiveHasher(secret: ArchiveHasher.bytes(lowerHex: c.keyHex)!)
            #expect(hasher.hmac(HashDomain(rawValue: c.domain)!, c.input) == c.hex)
        }
    }

    @Test("every domain's table position is its position in allCases; every prefix is hp:v2:<domain>:, each its own")
    func domainOrdinals() {
        for (i, d) in HashDomain.allCases.enumerated() {
            #expect(d.ordinal == i, "\(d)")
            #expect(d.prefix == Array("hp:v2:\(d.rawValue):".utf8))
        }
        #expect(Set(HashDomain.allCases.map(\.prefix)).count == HashDomain.allCases.count)
        // Each domain hashes with its own prefix (the templates follow the ordinals).
        for d in HashDomain.allCases {
            var stream = SHA256Stream(domain: d)
            stream.update(Array("abc".utf8))
            #expect(ArchiveHasher.sha256(d, Array("abc".utf8)) == stream.finalize(), "\(d)")
        }
    }

    @Test("strings written from UTF-8 bytes equal strings written from String, for every byte at every position")
    func bytesMatchStrings() {
        var rng = TestRandom(printingSeedFor: "bytesMatchStrings")
        var cases: [[UInt8]] = []
        for length in [0, 1, 7, 8, 9, 15, 16, 17, 64] {
            for position in 0..<max(length, 1) where length > 0 {
                for byte in UInt8.min...UInt8.max {
                    var text = (0..<length).map { _ in UInt8.random(in: 0x23...0x5B, using: &rng) }  // plain ASCII
                    text[position] = byte
                    cases.append(text)
                }
            }
            cases.append((0..<length).map { _ in UInt8(ascii: "a") })
        }
        cases.append(Array("caf\u{e9} \"quoted\" back\\slash\n".utf8))
        for text in cases {
            var a = CanonicalJSONWriter(), b = CanonicalJSONWriter()
            text.withUnsafeBufferPointer { a.writeString(utf8: $0) }
            b.writeString(String(decoding: text, as: UTF8.self))
            #expect(a.bytes == b.bytes, "\(text), seed \(rng.seed)")
            let naive = text.allSatisfy { $0 >= 0x20 && $0 != 0x22 && $0 != 0x5C && $0 < 0x80 }
            #expect(text.withUnsafeBufferPointer { CanonicalJSONWriter.isPlain($0) } == naive, "\(text), seed \(rng.seed)")
            if a.bytes != b.bytes { return }
        }
    }

    @Test("a hex member writes what ArchiveHasher.hex prints, quoted; null for none, an empty string for no bytes")
    func hexField() throws {
        var rng = TestRandom(printingSeedFor: "hexField")
        for length in [0, 1, 16, 32, 33] {
            let bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &rng) } + (length > 1 ? [0x00, 0xFF] : [])
            var a = CanonicalJSONWriter(), b = CanonicalJSONWriter()
            a.beginObject(); b.beginObject()
            bytes.withUnsafeBytes { a.field("h", hex: $0) }
            b.field("h", ArchiveHasher.hex(bytes))
            a.field("n", hex: nil); b.field("n", nil as String?)
            a.endObject(); b.endObject()
            #expect(a.bytes == b.bytes, "\(bytes)")
        }
    }
}

@Suite("Inline digests")
struct Digest32Tests {
    @Test("an inline digest is the same hash as the hex string, and its hex parses back to it")
    func sameAsHex() {
        var rng = TestRandom(printingSeedFor: "Digest32.sameAsHex")
        let hasher = ArchiveHasher(secret: (0..<32).map { UInt8($0) })
        for length in [0, 1, 55, 56, 64, 300] {
            let bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &rng) }
            let text = String(decoding: bytes.map { 0x20 + $0 % 90 }, as: UTF8.self)
            for domain in HashDomain.allCases {
                let reference = bytes.withUnsafeBytes { ArchiveHasher.sha256(domain, buffer: $0) }
                let d = ArchiveHasher.sha256Digest(domain, bytes)
                #expect(d.hex == reference)
                #expect(Digest32(hex: reference) == d)
                // A strict fingerprint's form: the head's 16 digits, then the hash's first 48.
                let head = UInt64.random(in: 0...UInt64.max, using: &rng)
                let headHex = String(repeating: "0", count: 16 - String(head, radix: 16).count) + String(head, radix: 16)
                #expect(ArchiveHasher.sha256Digest(domain, bytes, head: head).hex == headHex + reference.prefix(48))
                #expect(hasher.hmacDigest(domain, text).hex == hasher.hmac(domain, text))
            }
        }
    }

    @Test("only 64 lower-case hex digits parse; each byte is its own")
    func parsing() {
        let hex = String(repeating: "0123456789abcdef", count: 4)
        let d = Digest32(hex: hex)
        #expect(d?.hex == hex)
        #expect(Digest32(hex: String(hex.dropLast())) == nil)
        #expect(Digest32(hex: hex + "0") == nil)
        #expect(Digest32(hex: hex.uppercased()) == nil)
        #expect(Digest32(hex: String(hex.dropLast()) + "g") == nil)
        #expect(Digest32(hex: "") == nil)
        // Changing any one digit gives a different digest.
        var seen: Set<Digest32> = [d!]
        for i in 0..<64 {
            var u = Array(hex.utf8)
            u[i] = u[i] == UInt8(ascii: "0") ? UInt8(ascii: "1") : UInt8(ascii: "0")
            let other = Digest32(hex: String(decoding: u, as: UTF8.self))
            #expect(other != nil && other != d)
            seen.insert(other!)
        }
        #expect(seen.count == 65)
    }
}
