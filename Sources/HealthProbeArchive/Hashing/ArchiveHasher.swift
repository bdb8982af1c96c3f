import Crypto

/// SHA-256 content hashes and HMAC-SHA256 privacy hashes, lower-case hex,
/// every input prefixed with its `hp:v2:<domain>:` domain.
/// `@unchecked`: the only stored property is an immutable `SymmetricKey`.
public struct ArchiveHasher: @unchecked Sendable {
    private let key: SymmetricKey

    /// `secret` is the archive secret from the key directory.
    public init(secret: [UInt8]) { self.key = SymmetricKey(data: secret) }

    /// SHA-256 over `hp:v2:<domain>:` + `bytes`.
    public static func sha256(_ domain: HashDomain, _ bytes: [UInt8]) -> String {
        var h = SHA256()
        h.update(data: domain.prefix)
        h.update(data: bytes)
        return hex(h.finalize())
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
        var m = HMAC<SHA256>(key: key)
        m.update(data: domain.prefix)
        m.update(data: Array(text.utf8))
        return Self.hex(m.finalize())
    }

    /// Lower-case hex of a digest or MAC.
    public static func hex(_ bytes: some Sequence<UInt8>) -> String {
        let digits: [UInt8] = Array("0123456789abcdef".utf8)
        var out = [UInt8]()
        out.reserveCapacity(64)
        for b in bytes {
            out.append(digits[Int(b >> 4)])
            out.append(digits[Int(b & 0x0F)])
        }
        return String(decoding: out, as: UTF8.self)
    }
}

extension SHA256.Digest {
    /// Lower-case hex.
    public var hex: String { ArchiveHasher.hex(self) }
}
