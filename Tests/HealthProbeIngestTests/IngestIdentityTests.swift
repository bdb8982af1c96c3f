import AsyncHTTPClient
import Foundation
import HealthProbeArchive
import HealthProbeIngest
import HealthProbeProtocol
import HealthProbeTestSupport
import NIOCore
import NIOSSL
import ServiceLifecycle
import Testing

/// The ingest certificate re-issued from the same authority: real certificates, and a
/// real HTTPS request on 127.0.0.1 from a client that trusts only the authority (as the
/// phone does), before and after.
@Suite("Ingest certificate re-issue", .serialized)
struct IngestIdentityTests {
    static let day: Double = 86_400

    /// The status of a POST without a key (401 once the TLS handshake succeeded) to the
    /// endpoint serving `identity`, from a client that trusts only `authorityPEM`.
    func post(serving identity: IngestIdentity, trusting authorityPEM: String) async throws -> Int {
        let dir = TempDir()
        let home = ArchiveHome(root: dir.path + "/home")
        let archives = OpenArchives()
        _ = try archives.node(home)
        let processor = IngestProcessor(homes: CaptureHomes(home: home), archives: archives, logger: quietLogger, utcOffset: { _ in 0 })
        let server = IngestServer(keys: IngestKeys(keys: home.keyStore), processor: processor, logger: quietLogger, now: { Date().timeIntervalSince1970 }) { _ in }
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.trustRoots = .certificates(try NIOSSLCertificate.fromPEMBytes(Array(authorityPEM.utf8)))
        // A refused handshake is retried until the connect timeout: keep it short.
        let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: .init(tlsConfiguration: tls, timeout: .init(connect: .seconds(2))))
        let (ports, continuation) = AsyncStream.makeStream(of: Int.self)
        let app = try server.application(host: "127.0.0.1", port: 0, identity: identity) { continuation.yield($0) }
        let group = ServiceGroup(configuration: .init(services: [app], logger: quietLogger))
        let result: Result<Int, any Error> = await withTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try? await group.run() }
            var it = ports.makeAsyncIterator()
            guard let port = await it.next() else { return .failure(CancellationError()) }
            var request = HTTPClientRequest(url: "https://127.0.0.1:\(port)/ingest/hae")
            request.method = .POST
            request.body = .bytes(ByteBuffer(string: "{}"))
            let r: Result<Int, any Error>
            do { r = .success(Int(try await client.execute(request, timeout: .seconds(30)).status.code)) } catch { r = .failure(error) }
            // The client's connections closed first: the server then stops at once.
            try? await client.shutdown()
            await group.triggerGracefulShutdown()
            await tasks.waitForAll()
            return r
        }
        withExtendedLifetime(dir) {}
        return try result.get()
    }

    /// One per test (the suite is made anew for each), removed with it.
    let dir = TempDir()
    var store: KeyStore { KeyStore(directory: dir.path + "/keys") }

    @Test("20 days from its end: re-issued at start from the same authority, the old one kept as .previous; a client trusting only the authority accepts both")
    func expiring() async throws {
        let now = Date()
        let old = try IngestIdentity.loadOrCreate(store, hostnames: [], now: now.addingTimeInterval(-800 * Self.day))
        #expect(old.reissue == nil && old.warnings.isEmpty)
        #expect(abs(old.expiresAt - (now.timeIntervalSince1970 + 20 * Self.day)) < 5)
        #expect(try await post(serving: old, trusting: old.authorityPEM) == 401)

        let renewed = try IngestIdentity.loadOrCreate(store, hostnames: [], now: now)
        let r = try #require(renewed.reissue)
        #expect(r.reason == .expiring)
        #expect(r.previousFingerprint == old.fingerprint && renewed.fingerprint != old.fingerprint)
        #expect(renewed.authorityPEM == old.authorityPEM, "the authority the phone installed is unchanged")
        #expect(abs(renewed.expiresAt - (now.timeIntervalSince1970 + 820 * Self.day)) < 5)
        #expect(renewed.warnings.isEmpty)
        // The replaced pair, kept.
        #expect(r.previousKept == store.directory + "/ingest-tls-cert.pem.previous")
        let previous = try #require(try store.readSecretFile("ingest-tls-cert.pem.previous"))
        #expect(try CertificateDetails(pem: previous).fingerprint == old.fingerprint)
        #expect(try CertificateDetails(pem: previous).isKey(try #require(try store.readSecretFile("ingest-tls-key.pem.previous"))))
        let stored = try #require(try store.readSecretFile("ingest-tls-cert.pem"))
        #expect(try CertificateDetails(pem: stored).fingerprint == renewed.fingerprint)
        // The phone's trust, unchanged, accepts the new certificate.
        #expect(try await post(serving: renewed, trusting: old.authorityPEM) == 401)
        // Once re-issued it is kept.
        let again = try IngestIdentity.loadOrCreate(store, hostnames: [], now: now.addingTimeInterval(Self.day))
        #expect(again.reissue == nil && again.fingerprint == renewed.fingerprint)
    }

    @Test("expired: refused by a client trusting the authority before, re-issued and accepted after")
    func expired() async throws {
        let now = Date()
        let old = try IngestIdentity.loadOrCreate(store, hostnames: [], now: now.addingTimeInterval(-830 * Self.day))
        #expect(old.expiresAt < now.timeIntervalSince1970)
        await #expect(throws: (any Error).self) { _ = try await post(serving: old, trusting: old.authorityPEM) }
        let renewed = try IngestIdentity.loadOrCreate(store, hostnames: [], now: now)
        #expect(renewed.reissue?.reason == .expired)
        #expect(try await post(serving: renewed, trusting: old.authorityPEM) == 401)
    }

    @Test("a --hostname the certificate does not name re-issues it for the names asked for; fewer names keep it")
    func names() throws {
        let now = Date()
        let first = try IngestIdentity.loadOrCreate(store, hostnames: [], now: now)
        #expect(first.reissue == nil)
        let named = try IngestIdentity.loadOrCreate(store, hostnames: ["nas.local"], now: now)
        #expect(named.reissue?.reason == .names)
        let details = try CertificateDetails(pem: try #require(try store.readSecretFile("ingest-tls-cert.pem")))
        #expect(details.dnsNames == ["localhost", "nas.local"] && details.ipAddresses == ["127.0.0.1"])
        #expect(try IngestIdentity.loadOrCreate(store, hostnames: [], now: now).reissue == nil)
        #expect(try IngestIdentity.loadOrCreate(store, hostnames: ["nas.local"], now: now).reissue == nil)
    }

    @Test("an authority within a year of its end is warned about with what to do; what it issues never outlives it")
    func authorityNearItsEnd() async throws {
        let now = Date()
        let old = try IngestIdentity.loadOrCreate(store, hostnames: [], now: now.addingTimeInterval(-(3650 - 200) * Self.day))
        let renewed = try IngestIdentity.loadOrCreate(store, hostnames: [], now: now)
        #expect(renewed.reissue?.reason == .expired)
        #expect(renewed.expiresAt == renewed.authorityExpiresAt && renewed.authorityExpiresAt == old.authorityExpiresAt)
        #expect(abs(renewed.authorityExpiresAt - (now.timeIntervalSince1970 + 200 * Self.day)) < 5)
        #expect(renewed.warnings.count == 1)
        #expect(renewed.warnings.first?.contains("ingest-ca-cert.pem expires on") == true && renewed.warnings.first?.contains("install the new ingest-ca-cert.pem on the phone") == true,
                "\(renewed.warnings)")
        #expect(try await post(serving: renewed, trusting: old.authorityPEM) == 401)
    }

    @Test("without the authority's key a due certificate is kept with a warning saying why; an unreadable one is re-issued when the key is there")
    func cannotReissue() throws {
        let now = Date()
        let old = try IngestIdentity.loadOrCreate(store, hostnames: [], now: now.addingTimeInterval(-800 * Self.day))
        let authorityKey = try #require(try store.readSecretFile("ingest-ca-key.pem"))
        try FileManager.default.removeItem(atPath: dir.path + "/keys/ingest-ca-key.pem")
        let kept = try IngestIdentity.loadOrCreate(store, hostnames: [], now: now)
        #expect(kept.reissue == nil && kept.fingerprint == old.fingerprint)
        #expect(kept.warnings.first?.contains("ingest-ca-key.pem is missing") == true, "\(kept.warnings)")
        // An unreadable certificate without the authority's key: an error that says what to do.
        try store.writeSecretFile("ingest-tls-cert.pem", contents: "-----BEGIN CERTIFICATE-----\nnot one\n-----END CERTIFICATE-----\n")
        #expect { _ = try IngestIdentity.loadOrCreate(store, hostnames: [], now: now) } throws: { error in
            "\(error)".contains("cannot be re-issued") && "\(error)".contains("delete the ingest-*.pem files")
        }
        // With the key back, it is re-issued (nothing readable to keep as .previous).
        try store.writeSecretFile("ingest-ca-key.pem", contents: authorityKey)
        let renewed = try IngestIdentity.loadOrCreate(store, hostnames: [], now: now)
        #expect(renewed.reissue?.reason == .unreadable && renewed.reissue?.previousFingerprint == nil)
        #expect(renewed.reissue?.previousKept.hasPrefix("not kept") == true)
        #expect(renewed.authorityPEM == old.authorityPEM)
    }

    @Test("a key that is not the certificate's (a stop between writing the two) is re-issued at the next load, from the same authority")
    func keyNotForCertificate() throws {
        let now = Date()
        let first = try IngestIdentity.loadOrCreate(store, hostnames: [], now: now)
        try store.writeSecretFile("ingest-tls-key.pem", contents: try #require(try store.readSecretFile("ingest-ca-key.pem")))
        let renewed = try IngestIdentity.loadOrCreate(store, hostnames: [], now: now)
        #expect(renewed.reissue?.reason == .unreadable && renewed.authorityPEM == first.authorityPEM && renewed.fingerprint != first.fingerprint)
        #expect(try CertificateDetails(pem: try #require(try store.readSecretFile("ingest-tls-cert.pem"))).isKey(try #require(try store.readSecretFile("ingest-tls-key.pem"))))
    }
}
