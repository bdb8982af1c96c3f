import Foundation

/// A plain-text email (RFC 5322): headers and a UTF-8 body, lines ending in CRLF and at
/// most 998 octets. Header values lose any CR or LF, so nothing can add a header.
public enum SMTPMessage {
    public static func plainText(from: String, to: String, subject: String, body: String, date: Date, messageID: String) -> String {
        func clean(_ s: String) -> String { String(s.unicodeScalars.filter { $0 != "\r" && $0 != "\n" }.prefix(900).map(Character.init)) }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss '+0000'"
        let headers = [
            "From: HealthProbe <\(clean(from))>",
            "To: <\(clean(to))>",
            "Subject: \(encodedWord(clean(subject)))",
            "Date: \(formatter.string(from: date))",
            "Message-ID: <\(clean(messageID))@healthprobe>",
            "Auto-Submitted: auto-generated",
            "MIME-Version: 1.0",
            "Content-Type: text/plain; charset=utf-8",
            "Content-Transfer-Encoding: 8bit",
        ]
        let lines = body.replacingOccurrences(of: "\r\n", with: "\n").split(separator: "\n", omittingEmptySubsequences: false).flatMap(wrapped)
        return (headers + [""] + lines).joined(separator: "\r\n") + "\r\n"
    }

    /// A header value as is when ASCII, else as an RFC 2047 encoded word.
    static func encodedWord(_ s: String) -> String {
        s.unicodeScalars.allSatisfy({ $0.isASCII }) ? s : "=?utf-8?B?\(Data(s.utf8).base64EncodedString())?="
    }

    /// A body line split so no piece exceeds 998 octets (never inside a character).
    static func wrapped(_ line: Substring) -> [String] {
        var out: [String] = [], current = ""
        for c in line {
            if current.utf8.count + String(c).utf8.count > 998 { out.append(current); current = "" }
            current.append(c)
        }
        out.append(current)
        return out
    }
}
