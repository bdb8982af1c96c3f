import Crypto
import Foundation
import SwiftASN1
import X509
#if canImport(Glibc)
import Glibc
#endif

/// A real SMTP server for tests: `aiosmtpd` from the repository's `.venv` (`scripts/venv`) on
/// 127.0.0.1, offering STARTTLS with a self-signed certificate made here (and requiring it),
/// AUTH PLAIN only over TLS, and writing each accepted message to a file in `messages`.
public final class SMTPTestServer {
    /// `.venv/bin/python` of this repository.
    public static let python = repositoryRoot.appendingPathComponent(".venv/bin/python").path
    /// Whether `.venv/bin/python` exists and imports aiosmtpd.
    public static let available: Bool = {
        guard FileManager.default.isExecutableFile(atPath: python) else { return false }
        let p = Process()
        p.executableURL = URL(fileURLWithPath: python)
        p.arguments = ["-c", "import aiosmtpd"]
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle.nullDevice
        guard (try? p.run()) != nil else { return false }
        p.waitUntilExit()
        return p.terminationStatus == 0
    }()
    public static let skipReason = "needs aiosmtpd in .venv/bin/python (run scripts/venv)"

    public static let username = "hp-alerts"
    public static let password = "smtp-password-0123"

    public let dir = TempDir()
    public let process = Process()
    public private(set) var port = 0
    /// The server's certificate (PEM), to trust as the client's CA file.
    public var certificatePath: String { dir.file("cert.pem") }
    public var messages: String { dir.file("messages") }

    /// Starts the server; `starttls: false` offers no STARTTLS (a server a client must refuse);
    /// `implicit: true` speaks TLS from the first byte (SMTPS, as on port 465), AUTH PLAIN inside it.
    public init(starttls: Bool = true, implicit: Bool = false, timeout: Double = 30) throws {
        try Self.selfSigned(certificate: dir.file("cert.pem"), key: dir.file("key.pem"))
        try FileManager.default.createDirectory(atPath: messages, withIntermediateDirectories: true)
        try Self.script.write(toFile: dir.file("smtpd.py"), atomically: true, encoding: .utf8)
        process.executableURL = URL(fileURLWithPath: Self.python)
        process.arguments = [dir.file("smtpd.py"), dir.file("cert.pem"), dir.file("key.pem"), messages, Self.username, Self.password, implicit ? "implicit" : starttls ? "tls" : "plain"]
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        process.standardInput = Pipe()
        try process.run()
        let fd = out.fileHandleForReading.fileDescriptor
        var text = ""
        let deadline = Date().addingTimeInterval(timeout)
        var buffer = [UInt8](repeating: 0, count: 256)
        while !text.contains("\n"), deadline.timeIntervalSinceNow > 0 {
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&p, 1, 500) > 0 else { continue }
            let n = read(fd, &buffer, buffer.count)
            if n <= 0 { break }
            text += String(decoding: buffer[0..<n], as: UTF8.self)
        }
        guard let p = Int(text.trimmingCharacters(in: .whitespacesAndNewlines)), p > 0 else {
            stop()
            throw SMTPServerDidNotStart(output: String(text.prefix(300)))
        }
        port = p
    }

    public func stop() {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }

    deinit { stop() }

    /// The messages received so far, oldest first, waiting up to `within` seconds for `count`.
    public func received(count: Int = 1, within: Double = 10) throws -> [String] {
        let deadline = Date().addingTimeInterval(within)
        while true {
            let names = try FileManager.default.contentsOfDirectory(atPath: messages).filter { $0.hasSuffix(".eml") }.sorted()
            if names.count >= count || deadline.timeIntervalSinceNow <= 0 {
                return try names.map { try String(contentsOfFile: messages + "/" + $0, encoding: .utf8) }
            }
            Thread.sleep(forTimeInterval: 0.05)
        }
    }

    /// A self-signed P-256 certificate for 127.0.0.1 and localhost, valid for a day.
    public static func selfSigned(certificate: String, key: String) throws {
        let k = P256.Signing.PrivateKey()
        let name = try DistinguishedName { CommonName("127.0.0.1") }
        let now = Date()
        let cert = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: .init(k.publicKey),
            notValidBefore: now.addingTimeInterval(-3600), notValidAfter: now.addingTimeInterval(86_400),
            issuer: name, subject: name, signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                // Its own trust anchor, as `openssl req -x509` makes one.
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: 0))
                Critical(KeyUsage(digitalSignature: true, keyCertSign: true))
                try ExtendedKeyUsage([.serverAuth])
                SubjectAlternativeNames([.ipAddress(ASN1OctetString(contentBytes: [127, 0, 0, 1])), .dnsName("localhost")])
            },
            issuerPrivateKey: .init(k))
        try cert.serializeAsPEM().pemString.write(toFile: certificate, atomically: true, encoding: .utf8)
        try k.pemRepresentation.write(toFile: key, atomically: true, encoding: .utf8)
    }

    static let script = #"""
import asyncio, os, socket, ssl, sys, time
from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult

cert, key, out, user, password, mode = sys.argv[1:7]

class Keep:
    n = 0
    async def handle_DATA(self, server, session, envelope):
        Keep.n += 1
        head = "X-Envelope-From: %s\r\nX-Envelope-To: %s\r\nX-TLS: %s\r\n" % (envelope.mail_from, ",".join(envelope.rcpt_tos), "yes" if session.ssl or server.transport.get_extra_info("ssl_object") else "no")
        path = os.path.join(out, "%04d.eml" % Keep.n)
        with open(path + ".part", "wb") as f:
            f.write(head.encode() + envelope.original_content)
        os.rename(path + ".part", path)
        return "250 OK"

def authenticator(server, session, envelope, mechanism, auth_data):
    ok = mechanism == "PLAIN" and auth_data.login == user.encode() and auth_data.password == password.encode()
    return AuthResult(success=ok, handled=False)

s = socket.socket(); s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]; s.close()
kwargs = dict(hostname="127.0.0.1", port=port, authenticator=authenticator, auth_require_tls=(mode == "tls"), decode_data=False)
ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
ctx.load_cert_chain(cert, key)
if mode == "tls":
    kwargs.update(tls_context=ctx, require_starttls=True)
if mode == "implicit":
    # The whole connection is TLS (aiosmtpd's SMTPS): AUTH is offered inside it.
    kwargs.update(ssl_context=ctx)
controller = Controller(Keep(), **kwargs)
controller.start()
print(port, flush=True)
try:
    sys.stdin.read()
finally:
    controller.stop()
"""#
}

/// The test SMTP server printed no port.
public struct SMTPServerDidNotStart: Error, CustomStringConvertible {
    public let output: String
    public var description: String { "aiosmtpd reported no port; output: \(output)" }
}
