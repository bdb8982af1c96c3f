import Hummingbird
import HummingbirdAuth
import NIOCore

/// The request context of the web layer: the session (hummingbird-auth) and the peer address.
public struct WebContext: SessionRequestContext, RemoteAddressRequestContext {
    public typealias Session = WebSession
    public var coreContext: CoreRequestContextStorage
    public let sessions: SessionContext<WebSession>
    public let remoteAddress: SocketAddress?
    /// Forms and API bodies are small: 64 KiB.
    public var maxUploadSize: Int { 64 * 1024 }

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        sessions = .init()
        remoteAddress = source.channel.remoteAddress
    }
}

/// What a signed-in browser's session holds: who, and the token every change must carry.
public struct WebSession: Codable, Sendable {
    public var personID: Int64
    /// The CSRF token: 32 random bytes, hex, compared in constant time.
    public var csrf: String
    public var signedInAt: Double
}
