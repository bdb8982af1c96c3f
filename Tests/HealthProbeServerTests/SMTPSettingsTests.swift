import Foundation
import Testing
import HealthProbeArchive
@testable import HealthProbeServer
import HealthProbeTestSupport

/// The config file's `smtp` object: defaults, and every mistake refused by name.
@Suite("SMTP settings")
struct SMTPSettingsTests {
    @Test("smtp: host and from required, defaults for the rest, unknown keys and bad values refused with the key's name")
    func settings() throws {
        let dir = TempDir()
        func load(_ text: String) throws -> ServerConfig {
            try text.write(toFile: dir.path + "/config.json", atomically: true, encoding: .utf8)
            return try ServerConfig.load(dataDirectory: dir.path)
        }
        let s = try #require(try load(#"{"smtp": {"host": "mail.example.org", "from": "hp@example.org"}}"#).smtp)
        #expect(s == SMTPSettings(host: "mail.example.org", port: 587, from: "hp@example.org", requireStartTLS: true))
        #expect(try load(#"{"listen": "127.0.0.1:7447"}"#).smtp == nil)
        let full = try #require(try load(#"{"smtp": {"host": "h.example", "port": 2525, "from": "a@b.org", "username": "u", "password": "p", "require_starttls": false, "helo_name": "hp.example", "timeout_seconds": 5}}"#).smtp)
        #expect(full.port == 2525 && full.username == "u" && !full.requireStartTLS && full.heloName == "hp.example" && full.timeoutSeconds == 5)
        #expect(s.tls == .starttls)
        let implicit = try #require(try load(#"{"smtp": {"host": "h.example", "from": "a@b.org", "tls": "implicit"}}"#).smtp)
        #expect(implicit.tls == .implicit && implicit.port == 465, "implicit TLS defaults to port 465")
        #expect(try load(#"{"smtp": {"host": "h.example", "from": "a@b.org", "tls": "implicit", "port": 2465}}"#).smtp?.port == 2465)
        #expect(try load(#"{"smtp": {"host": "h.example", "from": "a@b.org", "tls": "starttls"}}"#).smtp?.port == 587)
        for bad in [#""ssl""#, "true", #""IMPLICIT""#] {
            #expect { try load(#"{"smtp": {"host": "h", "from": "a@b.org", "tls": \#(bad)}}"#) } throws: { "\($0)".contains(#""smtp.tls" must be "starttls" (port 587) or "implicit" (port 465)"#) }
        }
        for (text, needle) in [(#"{"smtp": {"from": "a@b.org"}}"#, "smtp.host"), (#"{"smtp": {"host": "h"}}"#, "smtp.from"),
                               (#"{"smtp": {"host": "h", "from": "nobody"}}"#, "smtp.from"), (#"{"smtp": {"host": "h", "from": "a@b.org", "prot": 25}}"#, "smtp.prot"),
                               (#"{"smtp": {"host": "h", "from": "a@b.org", "port": 70000}}"#, "smtp.port"), (#"{"smtp": {"host": "h", "from": "a@b.org", "port": 2.5}}"#, "smtp.port"),
                               (#"{"smtp": {"host": "h", "from": "a@b.org", "require_starttls": "yes"}}"#, "require_starttls"),
                               (#"{"smtp": {"host": "h\r\nRCPT TO:<x@y.org>", "from": "a@b.org"}}"#, "smtp.host"),
                               (#"{"smtp": {"host": "h", "from": "a@b.org", "username": "u"}}"#, "smtp.password"),
                               (#"{"smtp": {"host": "h", "from": "a@b.org", "ca_file": "/nonexistent/ca.pem"}}"#, "smtp.ca_file"),
                               (#"{"smtp": {"host": "h", "from": "a@b.org", "helo_name": "a b"}}"#, "helo_name"),
                               (#"{"smtp": {"host": "h", "from": "a@b.org", "timeout_seconds": 0}}"#, "timeout_seconds"), (#"{"smtp": 3}"#, "JSON object")] {
            #expect { try load(text) } throws: { "\($0)".contains(needle) }
        }
    }
}
