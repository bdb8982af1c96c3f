import Crypto
import Foundation
import SwiftASN1
import X509

/// What a stored PEM certificate says about itself: when it is valid, the names it is for,
/// and whether a private key belongs to it. Read to decide when a certificate is re-issued.
public struct CertificateDetails: Sendable, Equatable {
    public let notValidBefore: Date
    public let notValidAfter: Date
    /// Subject alternative names: host names, and IP addresses as text (`127.0.0.1`).
    public let dnsNames: [String]
    public let ipAddresses: [String]
    /// SHA-256 of the DER bytes (`CertificateFingerprint`).
    public let fingerprint: String
    let publicKey: Certificate.PublicKey

    /// Reads the first certificate of `pem`; throws `.certificate` when it is not one.
    public init(pem: String) throws(SelfSignedCertificate.CertificateError) {
        let cert: Certificate
        do { cert = try Certificate(pemEncoded: pem) } catch { throw .certificate }
        notValidBefore = cert.notValidBefore
        notValidAfter = cert.notValidAfter
        var dns: [String] = [], ips: [String] = []
        if let names = try? cert.extensions.subjectAlternativeNames {
            for name in names {
                switch name {
                case .dnsName(let n): dns.append(n)
                case .ipAddress(let octets): ips.append(Self.ipText(Array(octets.bytes)))
                default: break
                }
            }
        }
        dnsNames = dns
        ipAddresses = ips
        publicKey = cert.publicKey
        do { fingerprint = try SelfSignedCertificate.fingerprint(of: cert) } catch { throw .certificate }
    }

    /// True when `privateKeyPEM` is the P-256 key of this certificate.
    public func isKey(_ privateKeyPEM: String) -> Bool {
        guard let key = try? P256.Signing.PrivateKey(pemRepresentation: privateKeyPEM) else { return false }
        return Certificate.PublicKey(key.publicKey) == publicKey
    }

    static func ipText(_ b: [UInt8]) -> String {
        if b.count == 4 { return b.map(String.init).joined(separator: ".") }
        return stride(from: 0, to: b.count, by: 2).map { i in String(format: "%x", (UInt16(b[i]) << 8) | UInt16(b[min(i + 1, b.count - 1)])) }.joined(separator: ":")
    }
}
