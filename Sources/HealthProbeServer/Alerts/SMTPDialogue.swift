import Foundation

/// The client's side of one SMTP delivery as a state machine without I/O: fed the server's
/// replies (and word that TLS is up), it says what to do next. EHLO, STARTTLS, EHLO again,
/// AUTH PLAIN when credentials are set (only over TLS), MAIL FROM, RCPT TO, DATA, QUIT. Over
/// implicit TLS (port 465) the connection is secure from the start: no STARTTLS.
public struct SMTPDialogue: Sendable {
    /// Why a delivery failed; `description` holds no message content.
    public struct Failure: Error, Equatable, CustomStringConvertible {
        public var description: String
    }

    /// What the I/O does next.
    public enum Action: Sendable, Equatable {
        /// Write these bytes (commands end in CRLF).
        case send(String)
        /// Start TLS on the connection, then call `tlsStarted()`.
        case startTLS
        /// The message was accepted (the server answered 250 to the data).
        case delivered
        /// Close the connection: the dialogue is over.
        case close
        /// The delivery failed; close the connection.
        case fail(Failure)
    }

    public struct Envelope: Sendable, Equatable {
        public var from: String
        public var to: [String]
        /// The whole message, headers and body, lines ending in CRLF, not yet dot-stuffed.
        public var message: String
        public init(from: String, to: [String], message: String) {
            self.from = from
            self.to = to
            self.message = message
        }
    }

    enum State: Equatable {
        case greeting, ehlo, startTLS, handshaking, ehloSecure, auth, mailFrom, rcptTo(Int), data, body, quit, done
    }

    let envelope: Envelope
    let heloName: String
    let requireTLS: Bool
    let credentials: (user: String, password: String)?
    private(set) var state = State.greeting
    private(set) var secure = false

    public init(envelope: Envelope, heloName: String = "healthprobe", requireTLS: Bool = true, username: String? = nil, password: String? = nil,
                implicitTLS: Bool = false) {
        self.secure = implicitTLS
        self.envelope = envelope
        self.heloName = heloName
        self.requireTLS = requireTLS
        self.credentials = username.map { ($0, password ?? "") }
    }

    /// What to do after the server's `reply`.
    public mutating func receive(_ reply: SMTPReply) -> [Action] {
        switch state {
        case .greeting:
            guard reply.code == 220 else { return fail("the server's greeting was not 220", reply) }
            state = .ehlo
            return [.send("EHLO \(heloName)\r\n")]
        case .ehlo, .ehloSecure:
            guard reply.code == 250 else { return fail("EHLO was refused", reply) }
            let capabilities = reply.lines.dropFirst().map { $0.uppercased() }
            if !secure {
                if capabilities.contains(where: { $0 == "STARTTLS" || $0.hasPrefix("STARTTLS ") }) {
                    state = .startTLS
                    return [.send("STARTTLS\r\n")]
                }
                if requireTLS { return fail("the server does not offer STARTTLS and the settings require it", nil) }
                if credentials != nil { return fail("credentials are never sent without TLS, and the server does not offer STARTTLS", nil) }
            }
            if let credentials {
                let auth = capabilities.first { $0.hasPrefix("AUTH ") || $0.hasPrefix("AUTH=") }
                guard let auth, auth.dropFirst(5).split(separator: " ").contains("PLAIN") else {
                    return fail("the server does not offer AUTH PLAIN", nil)
                }
                state = .auth
                let token = Data(("\u{0}" + credentials.user + "\u{0}" + credentials.password).utf8).base64EncodedString()
                return [.send("AUTH PLAIN \(token)\r\n")]
            }
            return mailFrom()
        case .startTLS:
            guard reply.code == 220 else { return fail("STARTTLS was refused", reply) }
            state = .handshaking
            return [.startTLS]
        case .handshaking:
            return fail("the server spoke before TLS started", reply)
        case .auth:
            guard reply.code == 235 else { return fail("authentication failed", reply) }
            return mailFrom()
        case .mailFrom:
            guard reply.code == 250 else { return fail("MAIL FROM was refused", reply) }
            return rcpt(0)
        case .rcptTo(let i):
            guard reply.code == 250 || reply.code == 251 else { return fail("the recipient was refused", reply) }
            return rcpt(i + 1)
        case .data:
            guard reply.code == 354 else { return fail("DATA was refused", reply) }
            state = .body
            return [.send(Self.dotStuffed(envelope.message) + ".\r\n")]
        case .body:
            guard reply.code == 250 else { return fail("the message was refused", reply) }
            state = .quit
            return [.delivered, .send("QUIT\r\n")]
        case .quit:
            state = .done
            return [.close]
        case .done:
            return []
        }
    }

    /// TLS is up: greet again over it.
    public mutating func tlsStarted() -> [Action] {
        guard state == .handshaking else { return fail("TLS started out of turn", nil) }
        secure = true
        state = .ehloSecure
        return [.send("EHLO \(heloName)\r\n")]
    }

    /// Whether the dialogue ended (delivered and quit, or failed).
    public var isDone: Bool { state == .done }

    private mutating func mailFrom() -> [Action] {
        state = .mailFrom
        return [.send("MAIL FROM:<\(envelope.from)>\r\n")]
    }

    private mutating func rcpt(_ i: Int) -> [Action] {
        guard i < envelope.to.count else {
            state = .data
            return [.send("DATA\r\n")]
        }
        state = .rcptTo(i)
        return [.send("RCPT TO:<\(envelope.to[i])>\r\n")]
    }

    private mutating func fail(_ what: String, _ reply: SMTPReply?) -> [Action] {
        let wasTalking = state != .greeting && state != .handshaking
        state = .done
        let failure = Failure(description: "SMTP: " + what + (reply.map { " (\($0.shown))" } ?? ""))
        return (wasTalking ? [.send("QUIT\r\n")] : []) + [.fail(failure)]
    }

    /// The message as DATA carries it: CRLF line ends, a leading "." doubled, ending in CRLF.
    public static func dotStuffed(_ message: String) -> String {
        var lines = message.replacingOccurrences(of: "\r\n", with: "\n").replacingOccurrences(of: "\r", with: "\n")
            .split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        if lines.last == "" { lines.removeLast() }
        return lines.map { ($0.hasPrefix(".") ? "." + $0 : $0) + "\r\n" }.joined()
    }
}
