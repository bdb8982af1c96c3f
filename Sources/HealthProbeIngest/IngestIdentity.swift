import Foundation
import HealthProbeArchive
import HealthProbeCanonical
import HealthProbeProtocol

/// The ingest endpoint's TLS identity, made on first use and kept in the node's key
/// directory (mode 0600): an authority of the node's own (`ingest-ca-cert.pem`, the file to
/// install on the phone, and its key) and the server certificate it issued for the names
/// the phone connects to (`ingest-tls-cert.pem`, `ingest-tls-key.pem`, 820 days).
/// At each load the server certificate is re-issued from the same authority when it is
/// within 30 days of its end, past it, unreadable, not for its key, or not for every name
/// asked for; the one it replaces is kept as `*.previous` (docs/capture.md).
public struct IngestIdentity: Sendable {
    /// The server certificate followed by the authority's (the chain presented).
    public let certificatePEM: String
    public let privateKeyPEM: String
    /// The authority's certificate: what the phone trusts.
    public let authorityPEM: String
    /// SHA-256 of the server certificate's DER bytes.
    public let fingerprint: String
    public let authorityFile: String
    /// When the server certificate and the authority stop being valid (Unix seconds).
    public let expiresAt: Double
    public let authorityExpiresAt: Double
    /// What this load re-issued, nil when the certificate was kept (or first made).
    public let reissue: Reissue?
    /// For people (log and status), each saying what to do: an authority near or past its
    /// end, a certificate that needed re-issuing but could not be. Never a secret.
    public let warnings: [String]

    /// A server certificate replaced at load.
    public struct Reissue: Sendable, Equatable {
        public let reason: Reason
        /// The replaced certificate (nil when it was unreadable).
        public let previousFingerprint: String?
        public let previousExpiresAt: Double?
        /// Where the replaced certificate and key were kept, or why they were not.
        public let previousKept: String
    }

    /// Why the server certificate was re-issued.
    public enum Reason: String, Sendable, Codable {
        case expiring = "expires_within_30_days"
        case expired
        case names = "names_not_asked_for"
        case unreadable = "unreadable_or_not_for_its_key"
        case missing
    }

    static let authorityCertFile = "ingest-ca-cert.pem", authorityKeyFile = "ingest-ca-key.pem"
    static let keyFile = "ingest-tls-key.pem", certificateFile = "ingest-tls-cert.pem"
    static let previousSuffix = ".previous"
    /// A server certificate this close to its end is re-issued.
    public static let renewWithin: Double = 30 * 86_400
    /// An authority this close to its end is warned about.
    public static let authorityWarnWithin: Double = 365 * 86_400
    static let commonName = "HealthProbe node ingest"

    /// The identity in `keys`, made (for `hostnames`, `localhost` and 127.0.0.1) when there is
    /// none, its server certificate re-issued from the same authority when due at `now`.
    public static func loadOrCreate(_ keys: KeyStore, hostnames: [String], now: Date = Date()) throws -> IngestIdentity {
        let authorityFile = keys.directory + "/" + authorityCertFile
        let names = ["localhost"] + hostnames.filter { $0 != "localhost" }
        guard let ca = try keys.readSecretFile(authorityCertFile) else {
            let hadServer = try keys.readSecretFile(certificateFile) != nil
            let made = try LocalAuthority.generate(now: now, commonName: commonName, dnsNames: names, ipAddresses: [[127, 0, 0, 1]])
            try keys.writeSecretFile(authorityKeyFile, contents: made.authorityKeyPEM)
            try keys.writeSecretFile(authorityCertFile, contents: made.authorityPEM)
            try keys.writeSecretFile(keyFile, contents: made.server.privateKeyPEM)
            try keys.writeSecretFile(certificateFile, contents: made.server.certificatePEM)
            let warnings = hadServer ? ["\(authorityFile) was missing, so a new ingest authority was made: install it on the phone again (and remove the old one there)"] : []
            let details = try CertificateDetails(pem: made.server.certificatePEM), madeAuthority = try CertificateDetails(pem: made.authorityPEM)
            return loaded(made.server.certificatePEM, made.server.privateKeyPEM, made.authorityPEM, details, madeAuthority, authorityFile, reissue: nil, warnings)
        }
        let authority: CertificateDetails
        do { authority = try CertificateDetails(pem: ca) } catch {
            throw ArchiveError(.keyDirectory, "the ingest authority \(authorityFile) is damaged; delete the ingest-*.pem files in \(keys.directory) to make new ones (phones must then trust the new authority)")
        }
        var warnings: [String] = []
        let t = now.timeIntervalSince1970, authorityEnd = authority.notValidAfter.timeIntervalSince1970
        if authorityEnd <= t {
            warnings.append("the ingest authority \(authorityFile) expired on \(CanonicalDate.string(authorityEnd)): phones refuse the endpoint. Stop `hp-node serve`, delete the ingest-*.pem files in \(keys.directory), start it again and install the new \(authorityCertFile) on the phone")
        } else if authorityEnd - t <= authorityWarnWithin {
            warnings.append("the ingest authority \(authorityFile) expires on \(CanonicalDate.string(authorityEnd)): before then, stop `hp-node serve`, delete the ingest-*.pem files in \(keys.directory), start it again and install the new \(authorityCertFile) on the phone")
        }

        let cert = try keys.readSecretFile(certificateFile), key = try keys.readSecretFile(keyFile)
        let current = cert.flatMap { try? CertificateDetails(pem: $0) }
        let reason: Reason?
        if cert == nil || key == nil {
            reason = .missing
        } else if let current, let key, current.isKey(key) {
            let end = current.notValidAfter.timeIntervalSince1970
            if end <= t { reason = .expired }
            else if end - t <= renewWithin { reason = .expiring }
            else if !Set(names).isSubset(of: current.dnsNames) || !current.ipAddresses.contains("127.0.0.1") { reason = .names }
            else { reason = nil }
        } else {
            reason = .unreadable
        }
        // The pair in use when it is readable and for its key.
        let inUse: (cert: String, key: String, details: CertificateDetails)? = reason == .unreadable || reason == .missing ? nil : {
            guard let cert, let key, let current else { return nil }
            return (cert, key, current)
        }()
        if let u = inUse, reason == .expiring || reason == .expired, authorityEnd <= max(u.details.notValidAfter.timeIntervalSince1970, t) {
            // Re-issuing would not make it last longer: the authority ends first (or has ended).
            warnings.append("the ingest certificate expires on \(CanonicalDate.string(u.details.notValidAfter.timeIntervalSince1970)) and cannot be re-issued for longer: its authority ends then too")
            return loaded(u.cert, u.key, ca, u.details, authority, authorityFile, reissue: nil, warnings)
        }
        guard let reason else {
            guard let u = inUse else { throw ArchiveError(.keyDirectory, "the ingest certificate in \(keys.directory) cannot be read") }
            return loaded(u.cert, u.key, ca, u.details, authority, authorityFile, reissue: nil, warnings)
        }

        guard let caKey = try keys.readSecretFile(authorityKeyFile) else {
            let why = "\(keys.directory)/\(authorityKeyFile) is missing"
            if let u = inUse {
                warnings.append("the ingest certificate needs re-issuing (\(reason.rawValue)) but cannot be: \(why). Restore it from a backup, or delete the ingest-*.pem files to make a new authority and install it on the phone")
                return loaded(u.cert, u.key, ca, u.details, authority, authorityFile, reissue: nil, warnings)
            }
            throw ArchiveError(.keyDirectory, "the ingest certificate in \(keys.directory) is \(reason.rawValue) and cannot be re-issued: \(why). Restore it from a backup, or delete the ingest-*.pem files to make new ones (phones must then trust the new authority)")
        }
        let issued: SelfSignedCertificate
        do {
            issued = try LocalAuthority.issueServer(authorityPEM: ca, authorityKeyPEM: caKey, now: now, commonName: commonName, dnsNames: names, ipAddresses: [[127, 0, 0, 1]])
        } catch {
            throw ArchiveError(.keyDirectory, "the ingest certificate in \(keys.directory) must be re-issued (\(reason.rawValue)) but the authority cannot issue it: \(error). Delete the ingest-*.pem files to make new ones (phones must then trust the new authority)")
        }
        // The replaced pair first, then the new key and certificate: a stop between the two
        // leaves a certificate not for its key, which the next load re-issues.
        var kept = "not kept: there was no readable certificate and key"
        if let u = inUse {
            try keys.writeSecretFile(certificateFile + previousSuffix, contents: u.cert)
            try keys.writeSecretFile(keyFile + previousSuffix, contents: u.key)
            kept = "\(keys.directory)/\(certificateFile)\(previousSuffix)"
        }
        try keys.writeSecretFile(keyFile, contents: issued.privateKeyPEM)
        try keys.writeSecretFile(certificateFile, contents: issued.certificatePEM)
        let reissue = Reissue(reason: reason, previousFingerprint: inUse?.details.fingerprint, previousExpiresAt: inUse?.details.notValidAfter.timeIntervalSince1970, previousKept: kept)
        let details = try CertificateDetails(pem: issued.certificatePEM)
        return loaded(issued.certificatePEM, issued.privateKeyPEM, ca, details, authority, authorityFile, reissue: reissue, warnings)
    }

    private static func loaded(_ cert: String, _ key: String, _ ca: String, _ details: CertificateDetails, _ authority: CertificateDetails, _ authorityFile: String,
                               reissue: Reissue?, _ warnings: [String]) -> IngestIdentity {
        IngestIdentity(certificatePEM: cert + "\n" + ca, privateKeyPEM: key, authorityPEM: ca, fingerprint: details.fingerprint, authorityFile: authorityFile,
                       expiresAt: details.notValidAfter.timeIntervalSince1970, authorityExpiresAt: authority.notValidAfter.timeIntervalSince1970,
                       reissue: reissue, warnings: warnings)
    }
}
