import Foundation
import HealthProbeArchive
import HealthProbeImport
import HTTPTypes
import Hummingbird
import HummingbirdTLS
import Logging
import NIOCore
import NIOSSL
import ServiceLifecycle

/// The Health Auto Export ingest endpoint: `POST /ingest/hae?period=...&aggregation=...`
/// with `Authorization: Bearer KEY` or `api-key: KEY`. Answers 200 with the counts only
/// once the observation is committed (or says the same bytes were recorded before);
/// 401 before reading a body for any other key; 400 naming what was wrong and where;
/// 413 for a body over the limit; 408 for one that does not arrive in time.
public struct IngestServer: Sendable {
    public struct Settings: Sendable {
        /// The largest body accepted (Health Auto Export sends a week of minute data in about 20 MB).
        public var maxBodyBytes = 64 << 20
        /// How long a body may take to arrive once its head has.
        public var bodyTimeout: Duration = .seconds(120)
        /// An idle connection is closed after this long.
        public var idleTimeout: TimeAmount = .seconds(75)
        public init() {}
    }

    let keys: IngestKeys
    let processor: IngestProcessor
    let settings: Settings
    let logger: Logger
    let now: @Sendable () -> Double
    /// Told the automation's name after each new observation (to sync it).
    let recorded: @Sendable (String) -> Void

    public init(keys: IngestKeys, processor: IngestProcessor, settings: Settings = Settings(), logger: Logger,
                now: @escaping @Sendable () -> Double = { Date().timeIntervalSince1970 }, recorded: @escaping @Sendable (String) -> Void = { _ in }) {
        self.keys = keys
        self.processor = processor
        self.settings = settings
        self.logger = logger
        self.now = now
        self.recorded = recorded
    }

    /// The endpoint as a service: over TLS with `identity` (nil: plain HTTP, for a LAN the operator chose).
    public func application(host: String, port: Int, identity: IngestIdentity?, onListening: @escaping @Sendable (Int) async -> Void = { _ in }) throws -> some Service {
        let running: @Sendable (any Channel) async -> Void = { channel in await onListening(channel.localAddress?.port ?? port) }
        let address = ApplicationConfiguration(address: .hostname(host, port: port), serverName: nil)
        guard let identity else {
            return Application(router: router(), server: .http1(configuration: .init(idleTimeout: settings.idleTimeout)), configuration: address,
                               onServerRunning: running, logger: logger)
        }
        var tls = TLSConfiguration.makeServerConfiguration(
            certificateChain: try NIOSSLCertificate.fromPEMBytes(Array(identity.certificatePEM.utf8)).map { .certificate($0) },
            privateKey: .privateKey(try NIOSSLPrivateKey(bytes: Array(identity.privateKeyPEM.utf8), format: .pem)))
        tls.minimumTLSVersion = .tlsv12
        return Application(router: router(), server: try .tls(.http1(configuration: .init(idleTimeout: settings.idleTimeout)), tlsConfiguration: tls),
                           configuration: address, onServerRunning: running, logger: logger)
    }

    func router() -> Router<BasicRequestContext> {
        let router = Router(context: BasicRequestContext.self)
        router.post("/ingest/hae") { request, _ in try await ingest(request) }
        router.get("/healthz") { _, _ in Self.reply(.ok, ["status": "ok"]) }
        return router
    }

    /// The key a request presents: `Authorization: Bearer KEY`, else `api-key: KEY`.
    static func presentedKey(_ headers: HTTPFields) -> String? {
        if let auth = headers[.authorization], auth.utf8.count > 7, auth.lowercased().hasPrefix("bearer ") {
            return String(auth.dropFirst(7)).trimmingCharacters(in: .whitespaces)
        }
        if let name = HTTPField.Name("api-key"), let key = headers[name] { return key.trimmingCharacters(in: .whitespaces) }
        return nil
    }

    func ingest(_ request: Request) async throws -> Response {
        guard let key = Self.presentedKey(request.headers), let automation = try keys.automation(forKey: key) else {
            var r = Self.reply(.unauthorized, ["error": "send the automation's key as `Authorization: Bearer KEY` or `api-key: KEY` (`hp-node ingest-key create NAME` makes one)"])
            r.headers[.wwwAuthenticate] = "Bearer"
            return r
        }
        let query = request.uri.queryParameters
        var period: HAEPeriod?, aggregation: HAEAggregation?
        if let p = query["period"] {
            guard let v = HAEPeriod(rawValue: String(p)) else {
                return Self.reply(.badRequest, ["error": "period= must be one of \(HAEPeriod.allCases.map(\.rawValue).joined(separator: ", "))"])
            }
            period = v
        }
        if let a = query["aggregation"] {
            guard let v = HAEAggregation(rawValue: String(a)) else {
                return Self.reply(.badRequest, ["error": "aggregation= must be one of \(HAEAggregation.allCases.map(\.rawValue).joined(separator: ", "))"])
            }
            aggregation = v
        }
        // The body goes to disk as it arrives (hashed on the way): memory holds a chunk, not the body.
        let body: IncomingBody
        let directory = processor.bodyDirectory(automation)
        do {
            body = try await Self.withDeadline(settings.bodyTimeout) { [settings] in
                try await IncomingBody.receive(request.body, into: directory, limit: settings.maxBodyBytes)
            }
        } catch is DeadlineExceeded {
            return Self.reply(.requestTimeout, ["error": "the body did not arrive within \(settings.bodyTimeout); send it again"])
        } catch is IncomingBody.TooLarge {
            return Self.reply(.contentTooLarge, ["error": "the body is larger than \(settings.maxBodyBytes / (1 << 20)) MiB; in Health Auto Export turn on batch requests, or pick a shorter period"])
        } catch {
            logger.error("a body could not be kept", metadata: ["automation": "\(automation)", "error": "\(error)"])
            return Self.reply(.serviceUnavailable, ["error": "the body could not be kept on disk; it was not acknowledged: send it again"])
        }
        let outcome: IngestProcessor.Outcome
        do {
            outcome = try await processor.ingest(automation: automation, body: body, period: period, aggregation: aggregation, now: now())
        } catch {
            unlink(body.path)
            logger.error("ingest failed", metadata: ["automation": "\(automation)", "error": "\(error)"])
            return Self.reply(.serviceUnavailable, ["error": "the body could not be recorded (\(error)); it was not acknowledged: send it again"])
        }
        let r = outcome.recorded
        if r.outcome == "refused" {
            return Self.reply(.badRequest, ["error": r.reason ?? "refused", "body_sha256": r.sha256, "duplicate": outcome.duplicate])
        }
        if !outcome.duplicate { recorded(automation) }
        return Self.reply(.ok, [
            "status": outcome.duplicate ? "duplicate" : "recorded", "duplicate": outcome.duplicate, "automation": automation, "body_sha256": r.sha256,
            "observation_id": r.observationId ?? 0, "observation_status": r.status ?? "", "records": r.records, "types": r.types,
            "appeared": r.appeared, "changed": r.changed, "unchanged": r.unchanged, "disappeared": r.disappeared, "unrecognised": r.unrecognised,
        ])
    }

    struct DeadlineExceeded: Error {}

    /// `body`'s answer, or `DeadlineExceeded` after `limit` (the body's task is then cancelled).
    static func withDeadline<T: Sendable>(_ limit: Duration, _ body: @escaping @Sendable () async throws -> T) async throws -> T {
        try await withThrowingTaskGroup(of: T?.self) { group in
            group.addTask { try await body() }
            group.addTask { try await Task.sleep(for: limit); return nil }
            defer { group.cancelAll() }
            guard let first = try await group.next(), let value = first else { throw DeadlineExceeded() }
            return value
        }
    }

    /// A JSON answer (sorted keys).
    static func reply(_ status: HTTPResponse.Status, _ object: [String: any Sendable]) -> Response {
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data("{}".utf8)
        var headers = HTTPFields()
        headers[.contentType] = "application/json"
        headers[.cacheControl] = "no-store"
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }
}
