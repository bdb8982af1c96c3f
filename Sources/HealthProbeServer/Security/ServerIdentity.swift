import Foundation
import HealthProbeArchive
import HealthProbeProtocol
import NIOSSL

/// The server's TLS identity: a P-256 key and a self-signed certificate,
/// kept in `<data>/tls/` (key mode 0600). Nodes pin the certificate by its
/// fingerprint, the SHA-256 of its DER bytes in lower-case hex (what
/// `openssl x509 -noout -fingerprint -sha256` prints, without the colons).
public struct ServerIdentity: Sendable {
    public let certificatePEM: String
    public let privateKeyPEM: String
    public let fingerprint: String

    static let keyFile = "server-key.pem"
    static let certificateFile = "server-cert.pem"

    /// Makes a new identity valid for ten years from `now`.
    public static func generate(now: Date = Date(), commonName: String = "HealthProbe household server") throws -> ServerIdentity {
        let made = try SelfSignedCertificate.generate(now: now, commonName: commonName)
        return ServerIdentity(certificatePEM: made.certificatePEM, privateKeyPEM: made.privateKeyPEM, fingerprint: made.fingerprint)
    }

    /// Loads the identity of a data directory.
    public static func load(directory: String) throws -> ServerIdentity {
        let keyPath = directory + "/" + keyFile, certPath = directory + "/" + certificateFile
        guard FileManager.default.fileExists(atPath: keyPath), FileManager.default.fileExists(atPath: certPath) else {
            throw ArchiveError(.notFound, "no server identity in \(directory); `hp-server init` creates it")
        }
        let certPEM = try String(contentsOfFile: certPath, encoding: .utf8)
        let keyPEM = try String(contentsOfFile: keyPath, encoding: .utf8)
        do {
            let loaded = try SelfSignedCertificate.load(certificatePEM: certPEM, privateKeyPEM: keyPEM)
            return ServerIdentity(certificatePEM: certPEM, privateKeyPEM: keyPEM, fingerprint: loaded.fingerprint)
        } catch .certificate {
            throw ArchiveError(.invalidInput, "\(certPath) is not a PEM certificate")
        } catch .privateKey {
            throw ArchiveError(.invalidInput, "\(keyPath) is not a PEM P-256 private key")
        }
    }

    /// Writes the identity into `directory` (created mode 0700; the key 0600, atomically).
    public func write(directory: String) throws {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let keys = KeyStore(directory: directory)
        try keys.writeSecretFile(Self.keyFile, contents: privateKeyPEM)
        try keys.writeSecretFile(Self.certificateFile, contents: certificatePEM)
    }

    /// A TLS server context (TLS 1.3 only) presenting this identity.
    public func serverContext() throws -> NIOSSLContext {
        var config = TLSConfiguration.makeServerConfiguration(
            certificateChain: try NIOSSLCertificate.fromPEMBytes(Array(certificatePEM.utf8)).map { .certificate($0) },
            privateKey: .privateKey(try NIOSSLPrivateKey(bytes: Array(privateKeyPEM.utf8), format: .pem)))
        config.minimumTLSVersion = .tlsv13
        return try NIOSSLContext(configuration: config)
    }
}
