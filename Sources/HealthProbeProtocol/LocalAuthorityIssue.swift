import Crypto
import Foundation
import SwiftASN1
import X509

extension LocalAuthority {
    /// Why a server certificate could not be issued from a stored authority.
    public enum IssueError: Error, Sendable, CustomStringConvertible {
        case authorityCertificate, authorityKey, keyDoesNotMatch
        public var description: String {
            switch self {
            case .authorityCertificate: "the authority's certificate is not a readable PEM certificate"
            case .authorityKey: "the authority's private key is not a readable P-256 PEM key"
            case .keyDoesNotMatch: "the authority's private key does not belong to its certificate"
            }
        }
    }

    /// Issues a new server certificate (and key) from an existing authority, so that whoever
    /// trusts the authority trusts it too: valid 820 days from `now` (never past the
    /// authority's own end), for `dnsNames` and `ipAddresses`.
    public static func issueServer(authorityPEM: String, authorityKeyPEM: String, now: Date, commonName: String,
                                   dnsNames: [String], ipAddresses: [[UInt8]]) throws -> SelfSignedCertificate {
        let authority: Certificate, caKey: P256.Signing.PrivateKey
        do { authority = try Certificate(pemEncoded: authorityPEM) } catch { throw IssueError.authorityCertificate }
        do { caKey = try P256.Signing.PrivateKey(pemRepresentation: authorityKeyPEM) } catch { throw IssueError.authorityKey }
        guard Certificate.PublicKey(caKey.publicKey) == authority.publicKey else { throw IssueError.keyDoesNotMatch }
        return try issueLeaf(authorityName: authority.subject, authorityKey: caKey, notValidAfter: min(now.addingTimeInterval(820 * 86_400), authority.notValidAfter),
                             now: now, commonName: commonName, dnsNames: dnsNames, ipAddresses: ipAddresses)
    }

    /// The server certificate `authorityKey` signs as `authorityName`.
    static func issueLeaf(authorityName: DistinguishedName, authorityKey: P256.Signing.PrivateKey, notValidAfter: Date, now: Date, commonName: String,
                          dnsNames: [String], ipAddresses: [[UInt8]]) throws -> SelfSignedCertificate {
        let key = P256.Signing.PrivateKey()
        let name = try DistinguishedName { CommonName(commonName) }
        let alternatives = dnsNames.map { GeneralName.dnsName($0) } + ipAddresses.map { GeneralName.ipAddress(ASN1OctetString(contentBytes: ArraySlice($0))) }
        let leaf = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: .init(key.publicKey),
            notValidBefore: now.addingTimeInterval(-3600), notValidAfter: notValidAfter,
            issuer: authorityName, subject: name, signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.notCertificateAuthority)
                Critical(KeyUsage(digitalSignature: true))
                try ExtendedKeyUsage([.serverAuth])
                SubjectAlternativeNames(alternatives)
            },
            issuerPrivateKey: .init(authorityKey))
        return SelfSignedCertificate(certificatePEM: try leaf.serializeAsPEM().pemString, privateKeyPEM: key.pemRepresentation,
                                     fingerprint: try SelfSignedCertificate.fingerprint(of: leaf))
    }
}
