import Foundation
import HealthProbeArchive
import HealthProbeCanonical
import HealthProbeProtocol
import HealthProbeServer
import HTTPTypes
import Hummingbird
import HummingbirdAuth
import HummingbirdTLS
import Logging
import NIOCore
import NIOSSL
import ServiceLifecycle

/// The household's web dashboard and its JSON API (`/api/v1`), over HTTPS with the
/// server's own TLS identity. Every route but sign-in and the stylesheet needs a
/// session; every chain access is authorized (Access); every change carries the
/// session's CSRF token.
public struct WebServer: Sendable {
    public struct Settings: Sendable {
        /// bcrypt cost for passwords set through the web page.
        public var passwordCost: UInt8 = PasswordHashing.defaultCost
        /// How long a session lasts without signing in again.
        public var sessionLifetime: Duration = .seconds(12 * 3600)
        /// A connection's first request head (TLS handshake included) must arrive within 10 s,
        /// a request's body within 30 s of its head, the next request within 60 s of a response.
        public var requestLimits = RequestLimits(header: .seconds(10), body: .seconds(30), idle: .seconds(60))
        /// Failed sign-ins: the n-th within 15 minutes waits `min(base * 2^(n-1), maximum)` seconds,
        /// per name and per peer address, one attempt at a time.
        public var signInBase: Double = 0.5
        public var signInMaximum: Double = 8
        /// The address nodes reach the sync server at, for the enrollment command shown
        /// (asked each time: with port 0 the sync server knows its port only once it listens).
        public var syncAddress: @Sendable () -> String = { "127.0.0.1:7447" }
        /// Sends the alerts page's test messages (with the config file's `smtp` for email).
        public var alertSender: AlertSender = .shared
        public init() {}
    }

    let store: ServerStore
    let registry: DeviceRegistry
    let settings: Settings
    let logger: Logger
    let pages: Pages
    let throttle: LoginThrottle
    let flash = Flash()

    public init(store: ServerStore, settings: Settings = .init(), logger: Logger) throws {
        self.store = store
        self.registry = try store.registry()
        self.readers = ReplicaReaders(store: store)
        self.overlapAnswers = OverlapAnswers(file: store.root + "/cache/overlaps.json")
        self.settings = settings
        self.logger = logger
        self.pages = try Pages()
        self.throttle = LoginThrottle(base: settings.signInBase, maximum: settings.signInMaximum)
    }

    /// The web's time limits for slow peers (see `RequestDeadlines`).
    public struct RequestLimits: Sendable {
        public var header: TimeAmount
        public var body: TimeAmount
        public var idle: TimeAmount
        public init(header: TimeAmount, body: TimeAmount, idle: TimeAmount) {
            self.header = header
            self.body = body
            self.idle = idle
        }
    }

    var access: Access { Access(registry: registry, store: store) }
    let cache = ResultCache()
    /// Charts as drawn (SVG text, up to about 150 KB each for years of days).
    let charts = ResultCache(capacity: 96)
    /// Kept in the data directory's disposable cache, so a restart does not count again.
    let overlapAnswers: OverlapAnswers
    /// The replicas' read connections, kept open between requests.
    let readers: ReplicaReaders
    var queries: DashboardQueries { DashboardQueries(store: store, registry: registry, cache: cache, readers: readers, overlapAnswers: overlapAnswers) }

    /// The HTTPS application, a `Service` for the server's `ServiceGroup`. `onListening`
    /// gets the bound port (port 0 picks a free one).
    public func application(host: String, port: Int, onListening: @escaping @Sendable (Int) async -> Void = { _ in }) throws -> some Service {
        let identity = try store.identity()
        var tls = TLSConfiguration.makeServerConfiguration(
            certificateChain: try NIOSSLCertificate.fromPEMBytes(Array(identity.certificatePEM.utf8)).map { .certificate($0) },
            privateKey: .privateKey(try NIOSSLPrivateKey(bytes: Array(identity.privateKeyPEM.utf8), format: .pem)))
        tls.minimumTLSVersion = .tlsv12
        return Application(
            router: try router(),
            server: try .tls(.http1(configuration: .init(additionalChannelHandlers: [RequestDeadlines(settings.requestLimits)])), tlsConfiguration: tls),
            configuration: .init(address: .hostname(host, port: port), serverName: nil),
            onServerRunning: { channel in await onListening(channel.localAddress?.port ?? port) },
            logger: logger)
    }

    func router() throws -> Router<WebContext> {
        let router = Router(context: WebContext.self)
        router.add(middleware: SecurityHeaders())
        router.add(middleware: WebErrors(pages: pages))
        router.add(middleware: APIMethods())
        router.add(middleware: SameOriginWrites())
        router.add(middleware: SessionMiddleware(
            storage: RegistrySessionStore(registry: registry, now: { Self.now() }),
            configuration: .init(sessionCookieParameters: .init(name: "__Host-hp_session", path: "/", secure: true, sameSite: .strict),
                                 defaultSessionExpiration: settings.sessionLifetime)))
        router.add(middleware: WebErrors(pages: pages, access: access))
        router.get("/static/site.css") { _, _ in
            var headers = HTTPFields()
            headers[.contentType] = "text/css; charset=utf-8"
            headers[.cacheControl] = "public, max-age=3600"
            return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(string: Pages.css)))
        }
        addLoginRoutes(router)
        addPageRoutes(router)
        addAdminRoutes(router)
        addExportRoutes(router)
        addAPIRoutes(router)
        addAlertAPIRoutes(router)
        addAlertRoutes(router)
        return router
    }

    // MARK: Shared by the routes

    func chrome(_ title: String, _ person: People.Person, _ context: WebContext) -> Chrome {
        Chrome(title: title, signedInAs: person.name, role: person.role.rawValue, isAdmin: person.role == .admin, csrf: context.sessions.session?.csrf)
    }

    /// Checks a form's or header's CSRF token against the session's.
    static func checkCSRF(_ token: String?, _ context: WebContext) throws {
        guard let expected = context.sessions.session?.csrf, let token, ArchiveHasher.constantTimeEqual(expected, token) else {
            throw WebError(.csrf, "the form's security token is missing or stale; reload the page and try again")
        }
    }

    static func now() -> Double { Date().timeIntervalSince1970 }
}

