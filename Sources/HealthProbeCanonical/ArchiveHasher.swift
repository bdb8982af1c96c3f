import Crypto

/// SHA-256 content hashes and HMAC-SHA256 privacy hashes, lower-case hex,
/// every input prefixed with its `hp:v2:<domain>:` domain.
/// `@unchecked Sendable`: immutable (one `let` array of keyed HMAC values, only ever copied).
public struct ArchiveHasher: @unchecked Sendable {
    /// Per domain, an HMAC already keyed and fed the domain prefix. HMAC and
    /// SHA256 are copy-on-write values: copies are taken, the templates never change.
    private let hmacTemplates: [HMAC<SHA256>]

    /// `secret` is the archive secret from the key directory.
    public init(secret: [UInt8]) {
        let key = SymmetricKey(data: secret)
        hmacTemplates = HashDomain.allCases.map { domain in
            var m = HMAC<SHA256>(key: key)
            m.update(data: domain.prefix)
            return m
        }
    }

    // Immutable after initialization; callers only copy values out.
    nonisolated(unsafe) private static let shaTemplates: [SHA256] = HashDomain.allCases.map { domain in
        var h = SHA256()
        h.update(data: domain.prefix)
        return h
    }

    /// Whether `bytes` are exactly `count` lower-case hex digits: how hashes, secrets and
    /// fingerprints are written at every edge.
    public static func isLowerHex(_ bytes: some Collection<UInt8>, count: Int = 64) -> Bool {
        bytes.count == count && bytes.allSatisfy(isLowerHexDigit)
    }

    /// Whether `bytes[range]` is `count` lower-case hex digits (the hot path of bundle checks:
    /// concrete types, no generic iteration).
    public static func isLowerHex(_ bytes: [UInt8], _ range: Range<Int>, count: Int = 64) -> Bool {
        guard range.count == count, range.lowerBound >= 0, range.upperBound <= bytes.count else { return false }
        return bytes.withUnsafeBytes { b in
            var k = range.lowerBound
            // Eight bytes at a time: each must be below 0x80 and in 0x30...0x39 or 0x61...0x66
            // (added to bytes below 0x80, none of the constants carries into the next byte).
            let ones: UInt64 = 0x0101_0101_0101_0101, highs: UInt64 = 0x8080_8080_8080_8080
            while k &+ 8 <= range.upperBound {
                let w = b.loadUnaligned(fromByteOffset: k, as: UInt64.self)
                guard w & highs == 0 else { return false }
                let digit = (w &+ ones &* 0x50) & ~(w &+ ones &* 0x46)
                let letter = (w &+ ones &* 0x1F) & ~(w &+ ones &* 0x19)
                guard (digit | letter) & highs == highs else { return false }
                k &+= 8
            }
            while k < range.upperBound {
                guard isLowerHexDigit(b[k]) else { return false }
                k &+= 1
            }
            return true
        }
    }

    @inline(__always)
    static func isLowerHexDigit(_ c: UInt8) -> Bool { (c &- 0x30) < 10 || (c &- 0x61) < 6 }

    /// SHA-256 over `hp:v2:<domain>:` + `bytes`.
    public static func sha256(_ domain: HashDomain, _ bytes: [UInt8]) -> String {
        sha256Digest(domain, bytes).hex
    }

    /// SHA-256 over `hp:v2:<domain>:` + the bytes in `buffer`.
    public static func sha256(_ domain: HashDomain, buffer: UnsafeRawBufferPointer) -> String {
        sha256Digest(domain, buffer: buffer).hex
    }

    /// SHA-256 over `hp:v2:<domain>:` + the bytes in `buffer`, held inline.
    public static func sha256Digest(_ domain: HashDomain, buffer: UnsafeRawBufferPointer) -> Digest32 {
        var h = shaTemplates[domain.ordinal]
        h.update(bufferPointer: buffer)
        return h.finalize().withUnsafeBytes { Digest32(bytes: $0) }
    }

    /// SHA-256 over `hp:v2:<domain>:` + `bytes`, held inline.
    public static func sha256Digest(_ domain: HashDomain, _ bytes: [UInt8]) -> Digest32 {
        bytes.withUnsafeBytes { sha256Digest(domain, buffer: $0) }
    }

    /// `head` (8 bytes, big-endian), then the first 24 bytes of the SHA-256 over
    /// `hp:v2:<domain>:` + `bytes`: how strict fingerprints are built.
    public static func sha256Digest(_ domain: HashDomain, _ bytes: [UInt8], head: UInt64) -> Digest32 {
        var h = shaTemplates[domain.ordinal]
        bytes.withUnsafeBytes { h.update(bufferPointer: $0) }
        return h.finalize().withUnsafeBytes { Digest32(head: head, bytes: $0) }
    }

    /// SHA-256 over `hp:v2:<domain>:` + UTF-8 of `text`.
    public static func sha256(_ domain: HashDomain, _ text: String) -> String {
        sha256(domain, Array(text.utf8))
    }

    /// SHA-256 over `hp:v2:<domain>:` + the canonical JSON of `value`.
    public static func sha256(_ domain: HashDomain, json value: JSONValue) throws(HashingError) -> String {
        sha256(domain, try CanonicalJSON.encode(value))
    }

    /// HMAC-SHA256(archive secret, `hp:v2:<domain>:` + UTF-8 of `text`).
    public func hmac(_ domain: HashDomain, _ text: String) -> String {
        hmacDigest(domain, text).hex
    }

    /// HMAC-SHA256(archive secret, `hp:v2:<domain>:` + UTF-8 of `text`), held inline.
    public func hmacDigest(_ domain: HashDomain, _ text: String) -> Digest32 {
        var m = hmacTemplates[domain.ordinal]
        var t = text
        t.withUTF8 { m.update(data: UnsafeRawBufferPointer($0)) }
        return m.finalize().withUnsafeBytes { Digest32(bytes: $0) }
    }

    private static let hexDigits: StaticString = "0123456789abcdef"

    /// Writes the lower-case hex of `bytes` (two digits a byte) at `out`: the one
    /// encoder behind `hex(buffer:)` and `CanonicalJSONWriter.field(_:hex:)`.
    @inline(__always)
    static func writeHex(_ bytes: UnsafeRawBufferPointer, to out: UnsafeMutablePointer<UInt8>) {
        let digits = hexDigits.utf8Start
        for (i, b) in bytes.enumerated() {
            out[2 &* i] = digits[Int(b >> 4)]
            out[2 &* i &+ 1] = digits[Int(b & 0x0F)]
        }
    }

    /// Lower-case hex of raw bytes.
    public static func hex(buffer: UnsafeRawBufferPointer) -> String {
        String(unsafeUninitializedCapacity: buffer.count * 2) { out in
            if let base = out.baseAddress { writeHex(buffer, to: base) }
            return buffer.count * 2
        }
    }

    /// Lower-case hex of bytes.
    public static func hex(_ bytes: [UInt8]) -> String {
        bytes.withUnsafeBytes { hex(buffer: $0) }
    }

    /// The bytes of lower-case hex (an even number of `0-9a-f`), or nil.
    public static func bytes(lowerHex hex: String) -> [UInt8]? {
        var out: [UInt8] = []
        out.reserveCapacity(hex.utf8.count / 2)
        var high: UInt8?
        for c in hex.utf8 {
            let v: UInt8
            switch c {
            case 0x30...0x39: v = c - 0x30
            case 0x61...0x66: v = c - 0x61 + 10
            default: return nil
            }
            if let h = high { out.append(h << 4 | v); high = nil } else { high = v }
        }
        return high == nil ? out : nil
    }
}

extension SHA256.Digest {
    /// Lower-case hex.
    public var hex: String { withUnsafeBytes { ArchiveHasher.hex(buffer: $0) } }
}
