import Foundation
import Testing
@testable import HealthProbeServer

/// The SMTP dialogue and reply parser alone: every step, refusals, and hostile replies.
@Suite("SMTP dialogue")
struct SMTPDialogueTests {
    let envelope = SMTPDialogue.Envelope(from: "hp@example.org", to: ["ann@example.org", "bob@example.org"],
                                         message: "Subject: x\r\n\r\n.leading dot\r\nplain\r\n")

    func reply(_ text: String) throws -> SMTPReply {
        var p = SMTPReplyParser()
        return try #require(try p.feed(Array(text.utf8)).first)
    }

    @Test("the whole dialogue: EHLO, STARTTLS, EHLO again, AUTH PLAIN, MAIL, RCPT for each, DATA dot-stuffed, QUIT")
    func happyPath() throws {
        var d = SMTPDialogue(envelope: envelope, heloName: "hp.example", username: "u", password: "p")
        #expect(d.receive(try reply("220 mail ready\r\n")) == [.send("EHLO hp.example\r\n")])
        #expect(d.receive(try reply("250-mail\r\n250-STARTTLS\r\n250 AUTH PLAIN LOGIN\r\n")) == [.send("STARTTLS\r\n")], "no AUTH before TLS")
        #expect(d.receive(try reply("220 go ahead\r\n")) == [.startTLS])
        #expect(d.tlsStarted() == [.send("EHLO hp.example\r\n")])
        #expect(d.receive(try reply("250-mail\r\n250 AUTH LOGIN PLAIN\r\n")) == [.send("AUTH PLAIN AHUAcA==\r\n")])
        #expect(d.receive(try reply("235 ok\r\n")) == [.send("MAIL FROM:<hp@example.org>\r\n")])
        #expect(d.receive(try reply("250 ok\r\n")) == [.send("RCPT TO:<ann@example.org>\r\n")])
        #expect(d.receive(try reply("250 ok\r\n")) == [.send("RCPT TO:<bob@example.org>\r\n")])
        #expect(d.receive(try reply("251 forwarded\r\n")) == [.send("DATA\r\n")])
        #expect(d.receive(try reply("354 go\r\n")) == [.send("Subject: x\r\n\r\n..leading dot\r\nplain\r\n.\r\n")])
        #expect(d.receive(try reply("250 queued\r\n")) == [.delivered, .send("QUIT\r\n")])
        #expect(d.receive(try reply("221 bye\r\n")) == [.close])
        #expect(d.isDone)
    }

    @Test("STARTTLS required but not offered, credentials without TLS, AUTH PLAIN missing: refused before anything is sent")
    func refusesWithoutTLS() throws {
        var d = SMTPDialogue(envelope: envelope)
        _ = d.receive(try reply("220 hi\r\n"))
        let a = d.receive(try reply("250-mail\r\n250 8BITMIME\r\n"))
        #expect(a.first == .send("QUIT\r\n"))
        guard case .fail(let f)? = a.last else { Issue.record("expected a failure"); return }
        #expect(f.description.contains("STARTTLS"))

        var plain = SMTPDialogue(envelope: envelope, requireTLS: false, username: "u", password: "p")
        _ = plain.receive(try reply("220 hi\r\n"))
        #expect(plain.receive(try reply("250 mail\r\n")).contains { if case .fail = $0 { true } else { false } }, "credentials never go in clear")

        var open = SMTPDialogue(envelope: envelope, requireTLS: false)
        _ = open.receive(try reply("220 hi\r\n"))
        #expect(open.receive(try reply("250 mail\r\n")) == [.send("MAIL FROM:<hp@example.org>\r\n")], "allowed when the settings say so")

        var noPlain = SMTPDialogue(envelope: envelope, username: "u", password: "p")
        _ = noPlain.receive(try reply("220 hi\r\n"))
        _ = noPlain.receive(try reply("250-mail\r\n250 STARTTLS\r\n"))
        _ = noPlain.receive(try reply("220 go\r\n"))
        _ = noPlain.tlsStarted()
        #expect(noPlain.receive(try reply("250-mail\r\n250 AUTH CRAM-MD5\r\n")).contains { if case .fail = $0 { true } else { false } })
    }

    @Test("refusals at each step end the dialogue with the step and the server's code")
    func refusals() throws {
        for (step, bad) in [(0, "554 go away"), (1, "550 no"), (3, "454 TLS not available"), (4, "550 unknown user"), (5, "552 too big")] {
            var d = SMTPDialogue(envelope: .init(from: "a@b.org", to: ["c@d.org"], message: "x"), requireTLS: false)
            let good = ["220 hi", "250 mail", "250 ok", "250 ok", "354 go", "250 ok"]
            var last: [SMTPDialogue.Action] = []
            for (i, line) in good.enumerated() {
                last = d.receive(try reply((i == step ? bad : line) + "\r\n"))
                if i == step { break }
            }
            guard case .fail(let f)? = last.last else { Issue.record("step \(step): expected a failure, got \(last)"); continue }
            #expect(f.description.contains(String(bad.prefix(3))), "\(f)")
            #expect(d.isDone)
            #expect(d.receive(try reply("250 ok\r\n")) == [], "nothing after the end")
        }
    }

    @Test("a reply before TLS is up, or TLS started out of turn, fails")
    func outOfTurn() throws {
        var d = SMTPDialogue(envelope: envelope)
        _ = d.receive(try reply("220 hi\r\n"))
        #expect(d.tlsStarted().contains { if case .fail = $0 { true } else { false } })
        var e = SMTPDialogue(envelope: envelope)
        _ = e.receive(try reply("220 hi\r\n"))
        _ = e.receive(try reply("250-hi\r\n250 STARTTLS\r\n"))
        _ = e.receive(try reply("220 go\r\n"))
        #expect(e.receive(try reply("250 injected\r\n")).contains { if case .fail = $0 { true } else { false } })
    }

    @Test("hostile replies throw, never trap: bad codes, overlong lines, endless continuations, changing codes, bytes split anywhere")
    func hostileReplies() throws {
        for bad in ["2x0 hi\r\n", "99\r\n", "\r\n", "600 hi\r\n", "199 hi\r\n", "250*hi\r\n", "250-a\r\n251 b\r\n", "\u{0}\u{0}\u{0}\r\n",
                    String(repeating: "2", count: 5000) + "\r\n", String(repeating: "250-x\r\n", count: 200)] {
            var p = SMTPReplyParser()
            #expect(throws: SMTPReplyParser.Malformed.self) { try p.feed(Array(bad.utf8)) }
        }
        var endless = SMTPReplyParser()
        #expect(throws: SMTPReplyParser.Malformed.self) { try endless.feed([UInt8](repeating: 0x41, count: 100_000)) }
        // Random bytes: any outcome but a trap.
        var rng = SystemRandomNumberGenerator()
        for _ in 0..<500 {
            var p = SMTPReplyParser()
            _ = try? p.feed((0..<Int.random(in: 0...300, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) })
        }
        // One byte at a time gives the same replies; a bare LF ends a line too; text is kept as sent.
        let text = "250-first\r\n250-STARTTLS\n250 last line \u{FF}\r\n220 next\r\n"
        var p = SMTPReplyParser()
        var got: [SMTPReply] = []
        for b in Array(text.utf8) { got += try p.feed([b]) }
        #expect(got == [SMTPReply(code: 250, lines: ["first", "STARTTLS", "last line \u{FF}"]), SMTPReply(code: 220, lines: ["next"])])
        #expect(p.isIdle)
        #expect(SMTPReply(code: 550, lines: ["no\u{1B}[31m such user"]).shown == "550 no?[31m such user")
    }

    @Test("messages: CRLF lines, dot-stuffing, no header injection, long lines split, non-ASCII subjects encoded")
    func message() {
        let m = SMTPMessage.plainText(from: "hp@example.org", to: "ann@example.org", subject: "HealthProbe: 1 alert\r\nBcc: x@evil.org",
                                      body: "Hello\n.\n" + String(repeating: "é", count: 600), date: Date(timeIntervalSince1970: 0), messageID: "hp-alert-1")
        #expect(m.contains("Subject: HealthProbe: 1 alertBcc: x@evil.org\r\n"))
        #expect(!m.contains("\r\nBcc:"))
        #expect(m.contains("Date: Thu, 01 Jan 1970 00:00:00 +0000\r\n"))
        #expect(m.split(separator: "\r\n", omittingEmptySubsequences: false).allSatisfy { $0.utf8.count <= 998 })
        #expect(SMTPDialogue.dotStuffed(m).contains("\r\n..\r\n"))
        #expect(SMTPMessage.encodedWord("Größe") == "=?utf-8?B?R3LDtsOfZQ==?=")
    }
}
