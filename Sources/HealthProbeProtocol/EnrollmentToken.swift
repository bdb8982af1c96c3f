import Foundation
import HealthProbeCanonical

/// What `hp-server enroll --name NAME` prints and `hp-node enroll TOKEN` reads:
/// the server's address, its certificate fingerprint, the device name and a
/// one-time secret. Text form: `hpenroll1.` + base64url (no padding) of the
/// canonical JSON `{"address","fingerprint","name","secret"}`.
public struct EnrollmentToken: Sendable, Equatable {
    public var address: String
    public var fingerprint: String
    public var name: String
    /// 32 random bytes, lower-case hex.
    public var secret: String

    public static let prefix = "hpenroll1."

    public init(address: String, fingerprint: String, name: String, secret: String) {
        self.address = address
        self.fingerprint = fingerprint
        self.name = name
        self.secret = secret
    }

    public var text: String {
        let json = (try? CanonicalJSON.encode(.object([
            "address": .string(address), "fingerprint": .string(fingerprint), "name": .string(name), "secret": .string(secret)]))) ?? []
        return Self.prefix + Data(json).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }

    /// Parses a token, saying what is wrong with a bad one.
    public init(text: String) throws {
        let t = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard t.hasPrefix(Self.prefix) else {
            throw EnrollmentTokenError("not an enrollment token: it must start with \(Self.prefix) (copy the whole line `hp-server enroll` printed)")
        }
        var b64 = String(t.dropFirst(Self.prefix.count)).replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while b64.count % 4 != 0 { b64 += "=" }
        guard let data = Data(base64Encoded: b64), case .object(let o)? = try? JSONParser.parse(Array(data)),
              case .string(let address)? = o["address"], case .string(let fingerprint)? = o["fingerprint"],
              case .string(let name)? = o["name"], case .string(let secret)? = o["secret"] else {
            throw EnrollmentTokenError("the enrollment token is damaged (it does not decode); copy it again from `hp-server enroll`")
        }
        guard SyncAddress.parse(address) != nil else { throw EnrollmentTokenError("the enrollment token's server address \(address) is not HOST:PORT") }
        guard ArchiveHasher.isLowerHex(fingerprint.utf8) else { throw EnrollmentTokenError("the enrollment token's certificate fingerprint is not 64 hex characters") }
        guard ArchiveHasher.isLowerHex(secret.utf8) else { throw EnrollmentTokenError("the enrollment token's secret is not 64 hex characters") }
        guard DeviceName.isValid(name) else { throw EnrollmentTokenError("the enrollment token's device name is not valid") }
        self.init(address: address, fingerprint: fingerprint, name: name, secret: secret)
    }

    /// 32 random bytes as lower-case hex.
    public static func randomSecret() -> String {
        var g = SystemRandomNumberGenerator()
        return (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255, using: &g)) }.joined()
    }
}

/// An enrollment token that does not parse; the message says how to get a good one.
public struct EnrollmentTokenError: CodedError {
    public let message: String
    public var cause: (any Error)? { nil }
    init(_ message: String) { self.message = message }
}

/// Device names (Protocol/README.md, "Enrollment"): 1 to 64 ASCII letters, digits, `.`, `_` or `-`.
public enum DeviceName {
    public static func isValid(_ name: String) -> Bool {
        (1...64).contains(name.utf8.count) && name.utf8.allSatisfy { b in
            (0x30...0x39).contains(b) || (0x41...0x5A).contains(b) || (0x61...0x7A).contains(b) || b == 0x2E || b == 0x5F || b == 0x2D
        }
    }
}
