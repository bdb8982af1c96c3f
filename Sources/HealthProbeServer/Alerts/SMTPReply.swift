import Foundation

/// One SMTP reply (RFC 5321 4.2): a three-digit code and its text lines.
public struct SMTPReply: Sendable, Equatable {
    public var code: Int
    public var lines: [String]

    public init(code: Int, lines: [String]) {
        self.code = code
        self.lines = lines
    }

    /// The reply's text, printable ASCII only and at most 200 characters, for errors and logs.
    public var shown: String {
        let text = lines.joined(separator: " ").unicodeScalars.map { (0x20...0x7E).contains($0.value) ? Character($0) : "?" }
        return "\(code) " + String(String(text).prefix(200))
    }
}

/// Splits the bytes a server sends into replies. Hostile input (overlong lines, bad codes,
/// endless continuation lines, a reply whose lines change code) ends in a thrown error, never a trap.
public struct SMTPReplyParser: Sendable {
    public struct Malformed: Error, Equatable, CustomStringConvertible {
        public var description: String
    }

    /// Longest line accepted, CRLF excluded (RFC 5321 says 512; some servers send more).
    public static let maxLine = 2048
    /// Most lines in one reply (EHLO lists a few dozen at most).
    public static let maxLines = 100

    private var line: [UInt8] = []
    private var pending: (code: Int, lines: [String])?

    public init() {}

    /// Feeds bytes as they arrive; returns the replies they complete.
    public mutating func feed(_ bytes: some Sequence<UInt8>) throws -> [SMTPReply] {
        var out: [SMTPReply] = []
        for b in bytes {
            if b == UInt8(ascii: "\n") {
                if line.last == UInt8(ascii: "\r") { line.removeLast() }
                if let reply = try take(line) { out.append(reply) }
                line.removeAll(keepingCapacity: true)
            } else {
                guard line.count < Self.maxLine + 1 else { throw Malformed(description: "a reply line is longer than \(Self.maxLine) bytes") }
                line.append(b)
            }
        }
        return out
    }

    /// Whether bytes of an unfinished reply are waiting (nothing may be left when TLS starts).
    public var isIdle: Bool { line.isEmpty && pending == nil }

    private mutating func take(_ bytes: [UInt8]) throws -> SMTPReply? {
        guard bytes.count >= 3 else { throw Malformed(description: "a reply line is shorter than its three-digit code") }
        var code = 0
        for b in bytes.prefix(3) {
            guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(b) else { throw Malformed(description: "a reply line does not start with a three-digit code") }
            code = code * 10 + Int(b - UInt8(ascii: "0"))
        }
        guard (200...599).contains(code) else { throw Malformed(description: "reply code \(code) is outside 200-599") }
        let separator = bytes.count > 3 ? bytes[3] : UInt8(ascii: " ")
        guard separator == UInt8(ascii: " ") || separator == UInt8(ascii: "-") else {
            throw Malformed(description: "a reply code is followed by neither a space nor a hyphen")
        }
        let text = String(decoding: bytes.dropFirst(4), as: UTF8.self)
        if let p = pending, p.code != code { throw Malformed(description: "a multiline reply changed its code from \(p.code) to \(code)") }
        var lines = pending?.lines ?? []
        lines.append(text)
        guard lines.count <= Self.maxLines else { throw Malformed(description: "a reply has more than \(Self.maxLines) lines") }
        if separator == UInt8(ascii: "-") {
            pending = (code, lines)
            return nil
        }
        pending = nil
        return SMTPReply(code: code, lines: lines)
    }
}
