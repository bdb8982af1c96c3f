import HealthProbeArchive
import HealthProbeProtocol
import HealthProbeCanonical

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
