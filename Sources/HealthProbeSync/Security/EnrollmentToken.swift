import Foundation
import HealthProbeArchive

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
            throw ArchiveError(.invalidInput, "not an enrollment token: it must start with \(Self.prefix) (copy the whole line `hp-server enroll` printed)")
        }
        var b64 = String(t.dropFirst(Self.prefix.count)).replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while b64.count % 4 != 0 { b64 += "=" }
        guard let data = Data(base64Encoded: b64), case .object(let o)? = try? JSONParser.parse(Array(data)),
              case .string(let address)? = o["address"], case .string(let fingerprint)? = o["fingerprint"],
              case .string(let name)? = o["name"], case .string(let secret)? = o["secret"] else {
            throw ArchiveError(.invalidInput, "the enrollment token is damaged (it does not decode); copy it again from `hp-server enroll`")
        }
        guard SyncAddress.parse(address) != nil else { throw ArchiveError(.invalidInput, "the enrollment token's server address \(address) is not HOST:PORT") }
        guard ArchiveHasher.isLowerHex(fingerprint.utf8) else { throw ArchiveError(.invalidInput, "the enrollment token's certificate fingerprint is not 64 hex characters") }
        guard ArchiveHasher.isLowerHex(secret.utf8) else { throw ArchiveError(.invalidInput, "the enrollment token's secret is not 64 hex characters") }
        guard DeviceRegistry.isValidName(name) else { throw ArchiveError(.invalidInput, "the enrollment token's device name is not valid") }
        self.init(address: address, fingerprint: fingerprint, name: name, secret: secret)
    }

    /// 32 random bytes as lower-case hex.
    public static func randomSecret() -> String {
        var g = SystemRandomNumberGenerator()
        return (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255, using: &g)) }.joined()
    }
}

/// A node's enrollment with a household server, kept in its key directory
/// (`keys/server.json`, mode 0600): where the server is, the pinned
/// certificate fingerprint, the device name, and the long-term credential the
/// server issued when the token was redeemed.
public struct NodeEnrollment: Sendable, Equatable, Codable {
    public var address: String
    public var fingerprint: String
    public var name: String
    public var credential: String

    public static let file = "server.json"

    public init(address: String, fingerprint: String, name: String, credential: String) {
        self.address = address
        self.fingerprint = fingerprint
        self.name = name
        self.credential = credential
    }

    public static func load(_ keys: KeyStore) throws -> NodeEnrollment? {
        guard let text = try keys.readSecretFile(file) else { return nil }
        guard case .object(let o)? = try? JSONParser.parse(text), case .string(let address)? = o["address"],
              case .string(let fingerprint)? = o["fingerprint"], case .string(let name)? = o["name"],
              case .string(let credential)? = o["credential"] else {
            throw ArchiveError(.keyDirectory, "\(keys.directory)/\(file) is damaged; enroll again with a new token from `hp-server enroll`")
        }
        return NodeEnrollment(address: address, fingerprint: fingerprint, name: name, credential: credential)
    }

    public func save(_ keys: KeyStore) throws {
        let json = try CanonicalJSON.string(.object(["address": .string(address), "fingerprint": .string(fingerprint),
                                                     "name": .string(name), "credential": .string(credential)]))
        try keys.writeSecretFile(Self.file, contents: json + "\n")
    }
}
