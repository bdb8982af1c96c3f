import Crypto
import HealthProbeCanonical

/// How nodes pin the server's certificate (Protocol/README.md, "TLS"): the
/// SHA-256 of its DER bytes in lower-case hex (what `openssl x509 -noout
/// -fingerprint -sha256` prints, without the colons and lower-cased).
public enum CertificateFingerprint {
    public static func sha256(der: some Sequence<UInt8>) -> String {
        SHA256.hash(data: Array(der)).hex
    }
}
