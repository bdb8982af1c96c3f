import Crypto
import Foundation
import SwiftASN1
import X509

/// A P-256 key and a self-signed TLS server certificate, as PEM, with the fingerprint
/// peers pin (`CertificateFingerprint`): the household server's identity and a node's
/// ingest endpoint are both made this way.
public struct SelfSignedCertificate: Sendable {
    public let certificatePEM: String
    public let privateKeyPEM: String
    public let fingerprint: String

    /// Makes a new key and certificate valid for ten years from `now`, for `commonName`
    /// (peers pin it by its fingerprint, not by a name).
    public static func generate(now: Date = Date(), commonName: String) throws -> SelfSignedCertificate {
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
        return SelfSignedCertificate(certificatePEM: try certificate.serializeAsPEM().pemString, privateKeyPEM: key.pemRepresentation,
                                     fingerprint: try fingerprint(of: certificate))
    }

    /// Checks a stored certificate and key, returning them with the certificate's fingerprint.
    /// Throws `CertificateError` naming which of the two is not what it should be.
    public static func load(certificatePEM: String, privateKeyPEM: String) throws(CertificateError) -> SelfSignedCertificate {
        let cert: Certificate
        do { cert = try Certificate(pemEncoded: certificatePEM) } catch { throw .certificate }
        do { _ = try P256.Signing.PrivateKey(pemRepresentation: privateKeyPEM) } catch { throw .privateKey }
        do { return SelfSignedCertificate(certificatePEM: certificatePEM, privateKeyPEM: privateKeyPEM, fingerprint: try fingerprint(of: cert)) } catch { throw .certificate }
    }

    /// Which stored part was unreadable.
    public enum CertificateError: Error, Sendable { case certificate, privateKey }

    static func fingerprint(of certificate: Certificate) throws -> String {
        var serializer = DER.Serializer()
        try serializer.serialize(certificate)
        return CertificateFingerprint.sha256(der: serializer.serializedBytes)
    }
}

/// A certificate authority of one's own (ten years) and a server certificate it issues
/// (820 days: Apple devices refuse TLS server certificates valid for longer than 825),
/// for an endpoint that phones trust by installing the authority's certificate.
public struct LocalAuthority: Sendable {
    public let authorityPEM: String
    public let authorityKeyPEM: String
    public let server: SelfSignedCertificate

    /// Makes the authority and its server certificate for `dnsNames` and `ipAddresses`.
    public static func generate(now: Date = Date(), commonName: String, dnsNames: [String], ipAddresses: [[UInt8]]) throws -> LocalAuthority {
        let caKey = P256.Signing.PrivateKey()
        let caName = try DistinguishedName { CommonName(commonName + " authority") }
        let authority = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: .init(caKey.publicKey),
            notValidBefore: now.addingTimeInterval(-3600), notValidAfter: now.addingTimeInterval(10 * 365 * 86_400),
            issuer: caName, subject: caName, signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: 0))
                Critical(KeyUsage(keyCertSign: true, cRLSign: true))
            },
            issuerPrivateKey: .init(caKey))
        let server = try issueLeaf(authorityName: caName, authorityKey: caKey, notValidAfter: now.addingTimeInterval(820 * 86_400), now: now,
                                   commonName: commonName, dnsNames: dnsNames, ipAddresses: ipAddresses)
        return LocalAuthority(authorityPEM: try authority.serializeAsPEM().pemString, authorityKeyPEM: caKey.pemRepresentation, server: server)
    }
}
