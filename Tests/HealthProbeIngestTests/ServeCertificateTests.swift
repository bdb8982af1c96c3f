import AsyncHTTPClient
import Foundation
import HealthProbeArchive
import HealthProbeIngest
import HealthProbeTestSupport
import NIOCore
import NIOSSL
import Testing

/// The built `hp-node serve` started on a home whose ingest certificate is 20 days from its
/// end: it re-issues it from the same authority, says so, serves it to a client that trusts
/// only the authority, and `hp-node serve status` (table and `--json`) shows the expiry.
@Suite("hp-node serve re-issues its certificate", .serialized, .blocksOnTools)
struct ServeCertificateTests {
    @Test("serve re-issues a certificate 20 days from its end at start; status shows the new expiry and the re-issue")
    func serveReissues() async throws {
        let dir = TempDir()
        let root = dir.path + "/home"
        let (initialized, _, _) = try runTool("hp-node", ["--home", root, "init"])
        #expect(initialized == 0)
        let now = Date()
        let old = try IngestIdentity.loadOrCreate(ArchiveHome(root: root).keyStore, hostnames: [], now: now.addingTimeInterval(-800 * 86_400))
        let log = dir.path + "/serve.log"
        let (process, port) = try await IngestCrashTests.serve(root, log: log)
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.trustRoots = .certificates(try NIOSSLCertificate.fromPEMBytes(Array(old.authorityPEM.utf8)))
        let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: .init(tlsConfiguration: tls))
        var request = HTTPClientRequest(url: "https://127.0.0.1:\(port)/ingest/hae")
        request.method = .POST
        request.body = .bytes(ByteBuffer(string: "{}"))
        let status = try await client.execute(request, timeout: .seconds(30)).status.code
        try await client.shutdown()
        #expect(status == 401, "the TLS handshake trusting only the authority")
        process.terminate()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)

        let printed = try String(contentsOfFile: log, encoding: .utf8)
        #expect(printed.contains("ingest certificate re-issued (expires_within_30_days) from the same authority"), "\(printed)")
        #expect(!printed.contains(old.fingerprint + " "), "the old certificate is not the one served")
        let (jsonCode, json, _) = try runTool("hp-node", ["--home", root, "serve", "status", "--json"])
        #expect(jsonCode == 0)
        let s = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
        let expires = try #require(s["ingest_certificate_expires_at"] as? Double)
        #expect(abs(expires - (now.timeIntervalSince1970 + 820 * 86_400)) < 120)
        #expect(abs((s["ingest_authority_expires_at"] as? Double ?? 0) - old.authorityExpiresAt) < 1)
        let reissued = try #require(s["ingest_certificate_reissued"] as? [String: Any])
        #expect(reissued["reason"] as? String == "expires_within_30_days" && reissued["previous_fingerprint"] as? String == old.fingerprint)
        #expect((s["ingest_certificate_fingerprint"] as? String).map { $0 != old.fingerprint } == true)
        let (tableCode, table, _) = try runTool("hp-node", ["--home", root, "serve", "status"])
        #expect(tableCode == 0)
        #expect(table.contains("ingest certificate valid until ") && table.contains("re-issued") && table.contains("ingest-tls-cert.pem.previous"), "\(table)")
    }
}
