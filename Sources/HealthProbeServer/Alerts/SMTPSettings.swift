import Foundation

/// How the server sends alert email: the `smtp` object of the config file.
/// `{"host": "mail.example.org", "port": 587, "from": "healthprobe@example.org", "tls": "starttls",
///   "username": "...", "password": "...", "ca_file": "/etc/ssl/my-ca.pem", "require_starttls": true}`
public struct SMTPSettings: Sendable, Equatable {
    /// How TLS starts: STARTTLS on a plain connection (port 587), or from the first byte (port 465).
    public enum TLSMode: String, Sendable, Equatable, CaseIterable {
        case starttls, implicit
    }

    public var host: String
    public var port: Int
    /// The envelope and `From:` address.
    public var from: String
    /// AUTH PLAIN credentials, only ever sent over TLS; none when nil.
    public var username: String?
    public var password: String?
    /// PEM certificates to trust instead of the system's (a private CA, a self-signed server).
    public var caFile: String?
    /// Refuse to send without STARTTLS (the default); with `implicit` TLS there is no plain text at all.
    public var requireStartTLS: Bool
    /// STARTTLS (the default) or implicit TLS.
    public var tls: TLSMode
    /// The name given in EHLO.
    public var heloName: String
    /// The most a delivery may take, connection included.
    public var timeoutSeconds: Double

    public static let keys: Set<String> = ["host", "port", "from", "username", "password", "ca_file", "require_starttls", "helo_name", "timeout_seconds", "tls"]

    public init(host: String, port: Int = 587, from: String, username: String? = nil, password: String? = nil, caFile: String? = nil,
                requireStartTLS: Bool = true, heloName: String = "healthprobe", timeoutSeconds: Double = 30, tls: TLSMode = .starttls) {
        self.tls = tls
        self.host = host
        self.port = port
        self.from = from
        self.username = username
        self.password = password
        self.caFile = caFile
        self.requireStartTLS = requireStartTLS
        self.heloName = heloName
        self.timeoutSeconds = timeoutSeconds
    }
}
