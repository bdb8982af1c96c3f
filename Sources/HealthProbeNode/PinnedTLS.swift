import HealthProbeProtocol
import NIOSSL

/// TLS for the client: TLS 1.3, and the server's certificate accepted only
/// when its fingerprint equals the pinned one (no certificate authorities).
public enum PinnedTLS {
    public static func clientContext() throws -> NIOSSLContext {
        var config = TLSConfiguration.makeClientConfiguration()
        config.minimumTLSVersion = .tlsv13
        // Checked by the pin below instead of a chain of trust and a host name.
        config.certificateVerification = .noHostnameVerification
        // No authority is trusted (and the system's CA bundle is not parsed for every connection).
        config.trustRoots = .certificates([])
        return try NIOSSLContext(configuration: config)
    }

    /// A client handler that accepts only a leaf certificate with `fingerprint`.
    public static func handler(context: NIOSSLContext, fingerprint: String) throws -> NIOSSLClientHandler {
        let pinned = fingerprint.lowercased()
        return try NIOSSLClientHandler(context: context, serverHostname: nil) { certificates, promise in
            guard let leaf = certificates.first, let der = try? leaf.toDERBytes(),
                  CertificateFingerprint.sha256(der: der) == pinned else {
                promise.succeed(.failed)
                return
            }
            promise.succeed(.certificateVerified)
        }
    }
}
