/// A `HOST:PORT` address as the sync commands take it.
public enum SyncAddress {
    /// `(host, port)`, or nil when `text` is not `HOST:PORT`. Port 0 ("any free
    /// port") only when `allowAnyPort` (a server listening).
    public static func parse(_ text: String, allowAnyPort: Bool = false) -> (host: String, port: Int)? {
        guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]),
              ((allowAnyPort ? 0 : 1)...65535).contains(port) else { return nil }
        return (String(text[..<colon]), port)
    }
}
