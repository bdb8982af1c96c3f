import Crypto
import Foundation
import HealthProbeArchive
import HealthProbeProtocol
import NIOSSL
import SwiftASN1
import X509

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
        let key = P256.Signing.PrivateKey()
        let name = try DistinguishedName { CommonName(commonName) }
        let certificate = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: .init(key.publicKey),
            notValidBefore: now.addingTimeInterval(-3600), notValidAfter: now.addingTimeInterval(10 * 365 * 86_400),
            issuer: name, subject: name, signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.notCertificateAuthority)
                Critical(KeyUsage(digitalSignature: true))
                try ExtendedKeyUsage([.serverAuth])
            },
            issuerPrivateKey: .init(key))
        var serializer = DER.Serializer()
        try serializer.serialize(certificate)
        let der = serializer.serializedBytes
        return ServerIdentity(certificatePEM: try certificate.serializeAsPEM().pemString, privateKeyPEM: key.pemRepresentation,
                              fingerprint: CertificateFingerprint.sha256(der: der))
    }

    /// Loads the identity of a data directory.
    public static func load(directory: String) throws -> ServerIdentity {
        let keyPath = directory + "/" + keyFile, certPath = directory + "/" + certificateFile
        guard FileManager.default.fileExists(atPath: keyPath), FileManager.default.fileExists(atPath: certPath) else {
            throw ArchiveError(.notFound, "no server identity in \(directory); `hp-server init` creates it")
        }
        let certPEM = try String(contentsOfFile: certPath, encoding: .utf8)
        let keyPEM = try String(contentsOfFile: keyPath, encoding: .utf8)
        let cert: Certificate
        do { cert = try Certificate(pemEncoded: certPEM) } catch {
            throw ArchiveError(.invalidInput, "\(certPath) is not a PEM certificate", cause: error)
        }
        do { _ = try P256.Signing.PrivateKey(pemRepresentation: keyPEM) } catch {
            throw ArchiveError(.invalidInput, "\(keyPath) is not a PEM P-256 private key", cause: error)
        }
        var serializer = DER.Serializer()
        try serializer.serialize(cert)
        let der = serializer.serializedBytes
        return ServerIdentity(certificatePEM: certPEM, privateKeyPEM: keyPEM, fingerprint: CertificateFingerprint.sha256(der: der))
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
