import Crypto
import Foundation

/// AWS Signature Version 4 for S3 requests (header form, path-style URLs), on
/// swift-crypto's SHA-256 and HMAC-SHA256. The payload's hash is always signed
/// (`x-amz-content-sha256`), never `UNSIGNED-PAYLOAD`.
public struct SigV4: Sendable {
    public var accessKey: String
    public var secretKey: String
    public var region: String
    public var service = "s3"

    public init(accessKey: String, secretKey: String, region: String) {
        self.accessKey = accessKey
        self.secretKey = secretKey
        self.region = region
    }

    /// The SHA-256 of nothing: the payload hash of a request without a body.
    public static let emptyPayloadHash = hex(SHA256.hash(data: Data()))

    /// The headers to send: `host`, `x-amz-date`, `x-amz-content-sha256` and `authorization`.
    /// `path` is already encoded (`encodePath`); `query` holds the decoded names and values.
    public func headers(method: String, host: String, path: String, query: [(String, String)], payloadHash: String, date: Date) -> [(String, String)] {
        let (amzDate, day) = Self.timestamps(date)
        let canonicalQuery = query.map { (Self.encode($0.0), Self.encode($0.1)) }.sorted { $0 < $1 }.map { "\($0.0)=\($0.1)" }.joined(separator: "&")
        let signed = [("host", host), ("x-amz-content-sha256", payloadHash), ("x-amz-date", amzDate)]
        let signedNames = signed.map(\.0).joined(separator: ";")
        let canonicalRequest = [method, path, canonicalQuery, signed.map { "\($0.0):\($0.1)\n" }.joined(), signedNames, payloadHash].joined(separator: "\n")
        let scope = "\(day)/\(region)/\(service)/aws4_request"
        let stringToSign = ["AWS4-HMAC-SHA256", amzDate, scope, Self.hex(SHA256.hash(data: Data(canonicalRequest.utf8)))].joined(separator: "\n")
        var key = SymmetricKey(data: Data(("AWS4" + secretKey).utf8))
        for part in [day, region, service, "aws4_request"] {
            key = SymmetricKey(data: Data(HMAC<SHA256>.authenticationCode(for: Data(part.utf8), using: key)))
        }
        let signature = Self.hex(HMAC<SHA256>.authenticationCode(for: Data(stringToSign.utf8), using: key))
        let authorization = "AWS4-HMAC-SHA256 Credential=\(accessKey)/\(scope), SignedHeaders=\(signedNames), Signature=\(signature)"
        return signed + [("authorization", authorization)]
    }

    /// `yyyyMMdd'T'HHmmss'Z'` and `yyyyMMdd` in UTC.
    static func timestamps(_ date: Date) -> (String, String) {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        let c = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second], from: date)
        let day = String(format: "%04d%02d%02d", c.year ?? 0, c.month ?? 0, c.day ?? 0)
        return (day + String(format: "T%02d%02d%02dZ", c.hour ?? 0, c.minute ?? 0, c.second ?? 0), day)
    }

    /// RFC 3986 percent-encoding of everything but the unreserved characters (SigV4's `UriEncode`).
    public static func encode(_ s: String, keepSlash: Bool = false) -> String {
        var out = ""
        for byte in s.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                 UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."), UInt8(ascii: "~"):
                out.unicodeScalars.append(Unicode.Scalar(byte))
            case UInt8(ascii: "/") where keepSlash:
                out += "/"
            default:
                out += String(format: "%%%02X", byte)
            }
        }
        return out
    }

    /// Lower-case hex.
    public static func hex(_ bytes: some Sequence<UInt8>) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out = [UInt8]()
        for b in bytes { out.append(digits[Int(b >> 4)]); out.append(digits[Int(b & 0xF)]) }
        return String(decoding: out, as: UTF8.self)
    }
}
