import Foundation
import HealthProbeArchive
import HealthProbeProtocol

/// The ingest endpoint's TLS identity, made on first use and kept in the node's key
/// directory (mode 0600): an authority of the node's own (`ingest-ca-cert.pem`, the file to
/// install on the phone, and its key) and the server certificate it issued for the names
/// the phone connects to (`ingest-tls-cert.pem`, `ingest-tls-key.pem`, 820 days).
public struct IngestIdentity: Sendable {
    /// The server certificate followed by the authority's (the chain presented).
    public let certificatePEM: String
    public let privateKeyPEM: String
    /// The authority's certificate: what the phone trusts.
    public let authorityPEM: String
    /// SHA-256 of the server certificate's DER bytes.
    public let fingerprint: String
    public let authorityFile: String

    static let authorityCertFile = "ingest-ca-cert.pem", authorityKeyFile = "ingest-ca-key.pem"
    static let keyFile = "ingest-tls-key.pem", certificateFile = "ingest-tls-cert.pem"

    /// The identity in `keys`, made (for `hostnames`, `localhost` and 127.0.0.1) when there is none.
    public static func loadOrCreate(_ keys: KeyStore, hostnames: [String], now: Date = Date()) throws -> IngestIdentity {
        let authorityFile = keys.directory + "/" + authorityCertFile
        if let cert = try keys.readSecretFile(certificateFile), let key = try keys.readSecretFile(keyFile), let ca = try keys.readSecretFile(authorityCertFile) {
            do {
                let loaded = try SelfSignedCertificate.load(certificatePEM: cert, privateKeyPEM: key)
                return IngestIdentity(certificatePEM: cert + "\n" + ca, privateKeyPEM: key, authorityPEM: ca, fingerprint: loaded.fingerprint, authorityFile: authorityFile)
            } catch {
                throw ArchiveError(.keyDirectory, "the ingest certificate in \(keys.directory) is damaged; delete the four ingest-*.pem files to make new ones (phones must then trust the new authority)")
            }
        }
        let made = try LocalAuthority.generate(now: now, commonName: "HealthProbe node ingest", dnsNames: ["localhost"] + hostnames, ipAddresses: [[127, 0, 0, 1]])
        try keys.writeSecretFile(authorityKeyFile, contents: made.authorityKeyPEM)
        try keys.writeSecretFile(authorityCertFile, contents: made.authorityPEM)
        try keys.writeSecretFile(keyFile, contents: made.server.privateKeyPEM)
        try keys.writeSecretFile(certificateFile, contents: made.server.certificatePEM)
        return IngestIdentity(certificatePEM: made.server.certificatePEM + "\n" + made.authorityPEM, privateKeyPEM: made.server.privateKeyPEM,
                              authorityPEM: made.authorityPEM, fingerprint: made.server.fingerprint, authorityFile: authorityFile)
    }
}
