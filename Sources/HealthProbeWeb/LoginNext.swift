import Foundation

/// Where a browser goes after signing in: back to the page it asked for, but only to a
/// path of this site (never `//host`, a scheme, a backslash or a control character: an
/// open redirect would let a link send a fresh session elsewhere).
enum LoginNext {
    /// `next` when it is a local path, else nil.
    static func safe(_ next: String) -> String? {
        guard next.utf8.count <= 2048, next.hasPrefix("/"), !next.hasPrefix("//"), !next.hasPrefix("/\\"),
              !next.hasPrefix("/login"), !next.hasPrefix("/logout") else { return nil }
        for b in next.utf8 where b < 0x21 || b == 0x7F || b == UInt8(ascii: "\\") { return nil }
        return next
    }

    /// Percent-encodes a path and query as one query value.
    static func encode(_ next: String) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "/-._~")
        return next.addingPercentEncoding(withAllowedCharacters: allowed) ?? "/"
    }
}
