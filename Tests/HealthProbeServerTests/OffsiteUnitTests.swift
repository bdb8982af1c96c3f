import AsyncHTTPClient
import Foundation
import GRDB
import HealthProbeArchive
import HealthProbeProtocol
import Logging
import NIOCore
import NIOHTTP1
import Testing
@testable import HealthProbeServer
import HealthProbeTestSupport

@Suite("Object storage: signing, keys, listings, settings")
struct OffsiteUnitTests {
    @Test("SigV4 gives the signature of AWS's documented ListObjects example")
    func sigV4Vector() {
        // docs.aws.amazon.com/AmazonS3/latest/API/sig-v4-header-based-auth.html, "GET Bucket (List Objects)".
        let signer = SigV4(accessKey: "AKIAIOSFODNN7EXAMPLE", secretKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", region: "us-east-1")
        let headers = signer.headers(method: "GET", host: "examplebucket.s3.amazonaws.com", path: "/", query: [("max-keys", "2"), ("prefix", "J")],
                                     payloadHash: SigV4.emptyPayloadHash, date: Date(timeIntervalSince1970: 1_369_353_600))
        let authorization = headers.first { $0.0 == "authorization" }?.1
        #expect(authorization == "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, SignedHeaders=host;x-amz-content-sha256;x-amz-date, Signature=34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7")
        #expect(SigV4.encode("a b/c~", keepSlash: true) == "a%20b/c~" && SigV4.encode("a/b") == "a%2Fb")
    }

    @Test("bundle keys round-trip; anything else in the bucket is ignored, never trusted")
    func keys() {
        let chain = String(repeating: "ab", count: 32), sha = String(repeating: "0f", count: 32)
        let key = OffsiteKeys.bundle(chain: chain, sequence: 12, sha256: sha, gzip: true)
        #expect(key == "chains/\(chain)/00000012-\(sha).jsonl.gz")
        let parsed = OffsiteKeys.parseBundle(key)
        #expect(parsed?.chain == chain && parsed?.bundle.sequence == 12 && parsed?.bundle.sha256 == sha && parsed?.bundle.gzip == true)
        for hostile in ["", "chains", "chains/\(chain)/", "chains/\(chain)/00000000-\(sha).jsonl", "chains/\(chain)/0000001-\(sha).jsonl",
                        "chains/\(chain.uppercased())/00000001-\(sha).jsonl", "chains/\(chain)/00000001-\(sha).txt", "chains/\(chain)/00000001-\(sha)-x.jsonl",
                        "chains/../00000001-\(sha).jsonl", "chains/\(chain)/x/00000001-\(sha).jsonl", "chains/\(chain)/99999999999999999999-\(sha).jsonl"] {
            #expect(OffsiteKeys.parseBundle(hostile) == nil, "\(hostile)")
        }
        #expect(OffsiteKeys.snapshot(at: 1_795_927_204.5) == "snapshots/20261129T044004.500Z")
        #expect(OffsiteKeys.parseHashed("server.sqlite-\(sha)")?.0 == "server.sqlite" && OffsiteKeys.parseHashed("-\(sha)") == nil)
    }

    @Test("a listing is read for its keys and continuation; a hostile one gives no key it does not hold")
    func listing() {
        let xml = "<ListBucketResult><IsTruncated>true</IsTruncated><Contents><Key>a&amp;b</Key></Contents><Contents><Key>c</Key></Contents><NextContinuationToken>t1</NextContinuationToken></ListBucketResult>"
        let r = ListResult(xml: xml)
        #expect(r.keys == ["a&b", "c"] && r.truncated && r.nextToken == "t1")
        let broken = ListResult(xml: "<Key>unterminated")
        #expect(broken.keys.isEmpty && !broken.truncated)
    }

    @Test("the s3_* and backup_* settings: all required object-storage keys or none, each checked")
    func settings() throws {
        let dir = TempDir()
        let full = #"{"s3_endpoint":"http://127.0.0.1:8333/","s3_bucket":"b","s3_prefix":"/x/y/","s3_region":"r","s3_access_key":"a","s3_secret_key":"s","backup_to":"/tmp/b","backup_keep":3}"#
        try full.write(toFile: dir.file("config.json"), atomically: true, encoding: .utf8)
        let c = try ServerConfig.load(dataDirectory: dir.path)
        #expect(c.objectStore == ObjectStoreSettings(endpoint: "http://127.0.0.1:8333", bucket: "b", prefix: "x/y", region: "r", accessKey: "a", secretKey: "s"))
        #expect(c.backupTo == "/tmp/b" && c.backupKeep == 3)
        for (text, needle) in [(#"{"s3_bucket":"b"}"#, "\"s3_endpoint\" is missing"),
                               (#"{"s3_endpoint":"ftp://h","s3_bucket":"b","s3_region":"r","s3_access_key":"a","s3_secret_key":"s"}"#, "http(s)://HOST"),
                               (#"{"s3_endpoint":"http://h","s3_bucket":"b/c","s3_region":"r","s3_access_key":"a","s3_secret_key":"s"}"#, "bucket name"),
                               (#"{"backup_keep":0}"#, "positive")] {
            try text.write(toFile: dir.file("config.json"), atomically: true, encoding: .utf8)
            #expect { try ServerConfig.load(dataDirectory: dir.path) } throws: { "\($0)".contains(needle) }
        }
    }

    @Test("a store that refuses connections fails each request with the refusal at once, not at the request's 30 s deadline")
    func refusedStoreFailsFast() async throws {
        let port = try freeLoopbackPorts(1)[0]
        let objects = ObjectStore(settings: ObjectStoreSettings(endpoint: "http://127.0.0.1:\(port)", bucket: "b", prefix: "p", region: "r", accessKey: "a", secretKey: "s"))
        let error = await #expect(throws: ArchiveError.self) { try await objects.delete(key: objects.key("x")) }
        #expect(error?.cause.map { "\($0)" }?.contains("refused") == true, "\(String(describing: error))")
        // Timed on a thread of its own: the whole suite's load can hold up an await for minutes.
        // Retried, a request to a refused port would take the connect timeout (5 s), or with
        // AsyncHTTPClient's defaults its whole deadline (30 s).
        let request = try HTTPClient.Request(url: "http://127.0.0.1:\(port)/b/p/x", method: .DELETE)
        let took: Duration = await withCheckedContinuation { (done: CheckedContinuation<Duration, Never>) in
            Thread.detachNewThread {
                let started = ContinuousClock.now
                let response = ObjectStore.client.execute(request: request, deadline: NIODeadline.now() + .seconds(30))
                _ = try? response.wait()
                done.resume(returning: started.duration(to: .now))
            }
        }
        #expect(took < .seconds(4), "a request to a refused port took \(took)")
    }

    @Test("while a registry snapshot is due and the store refuses, the time served adds up in the registry; a stopped server adds nothing, a restarted one from its own start")
    func servedWhileDue() async throws {
        let dir = TempDir()
        let store = ServerStore(root: dir.path + "/data")
        try store.create()
        let port = try freeLoopbackPorts(1)[0]
        let objects = ObjectStore(settings: ObjectStoreSettings(endpoint: "http://127.0.0.1:\(port)", bucket: "b", prefix: "p", region: "r", accessKey: "a", secretKey: "s"))
        var settings = OffsiteService<ContinuousClock>.Settings()
        (settings.pollInterval, settings.retryInterval, settings.servedCountInterval) = (.milliseconds(50), .milliseconds(50), .milliseconds(100))
        var quiet = Logger(label: "test.offsite")
        quiet.logLevel = .critical  // a failed round per 50 ms
        let registry = try store.registry()
        let service = OffsiteService(uploader: OffsiteUploader(store: store, registry: registry, objects: objects), settings: settings,
                                     clock: ContinuousClock(), now: { Date().timeIntervalSince1970 }, logger: quiet)
        /// Runs the service until the time served while the snapshot is due passed `served`
        /// (the suite's load may hold a round up for long); how long it ran.
        func serve(past served: Double) async throws -> Double {
            let started = ContinuousClock.now
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await service.run() }
                let deadline = ContinuousClock.now + .seconds(600)
                while try (registry.offsiteSnapshotDue()?.served ?? 0) <= served {
                    guard ContinuousClock.now < deadline else { Issue.record("served while due never passed \(served) s"); break }
                    try await Task.sleep(for: .milliseconds(50))
                }
                group.cancelAll()
                try await group.waitForAll()
            }
            return started.duration(to: .now).seconds
        }
        let first = try await serve(past: 0.3)
        let due = try #require(try registry.offsiteSnapshotDue(), "no snapshot could reach the store: one is due")
        #expect(due.served <= first, "served \(due.served) s in a run of \(first) s")
        try await Task.sleep(for: .seconds(1))  // stopped
        let second = try await serve(past: due.served + 0.3)
        let again = try #require(try registry.offsiteSnapshotDue())
        #expect(again.since == due.since, "the earliest time is kept")
        #expect(again.served - due.served <= second, "served \(again.served - due.served) s more in a run of \(second) s")
    }

    @Test("upgrading a registry whose snapshot has been due for two days keeps those days as served, so an alert firing before the upgrade stays")
    func dueServedUpgrade() throws {
        let dir = TempDir()
        let path = dir.path + "/server.sqlite"
        let queue = try DatabaseQueue(path: path)
        try DeviceRegistry.migrator.migrate(queue, upTo: "v13 offsite snapshot due")
        let since = Date().timeIntervalSince1970 - 2 * 86_400
        try queue.write { db in try db.execute(sql: "INSERT INTO offsite_snapshot_due(id, since) VALUES (1, ?)", arguments: [since]) }
        try queue.close()
        let due = try #require(try DeviceRegistry(path: path).offsiteSnapshotDue())
        #expect(due.since == since && abs(due.served - 2 * 86_400) < 120, "\(due)")
    }

    @Test("a redirect is not followed; the error names the bucket's region, or the endpoint the store sends to, as the setting to change")
    func redirectNamesTheFix() async throws {
        let receiver = AlertReceiver()
        try await receiver.start()
        let objects = ObjectStore(settings: ObjectStoreSettings(endpoint: "http://127.0.0.1:\(receiver.port)", bucket: "b", prefix: "p", region: "us-east-1",
                                                                accessKey: "a", secretKey: "s"))
        let answers: [([(String, String)], String)] = [
            ([("x-amz-bucket-region", "eu-west-1"), ("Location", "https://b.s3.eu-west-1.amazonaws.com/p/x")], "the bucket is in region eu-west-1: set s3_region"),
            ([("Location", "http://127.0.0.1:\(receiver.port + 1)/b/p/x")], "sends the request to http://127.0.0.1:\(receiver.port + 1): set s3_endpoint"),
            // Followed, this would be a second request to the receiver.
            ([("Location", "http://127.0.0.1:\(receiver.port)/b/elsewhere")], "sends the request to http://127.0.0.1:\(receiver.port): set s3_endpoint"),
            // A bucket in the host name is not an endpoint these path-style requests can use.
            ([("Location", "https://b.s3.eu-west-1.amazonaws.com/p/x")], "answered with a redirect, which is not followed: set s3_endpoint to the bucket's own path-style endpoint"),
            ([("x-amz-bucket-region", "eu-west-1; see <b>")], "answered with a redirect, which is not followed"),
        ]
        for (headers, expected) in answers {
            receiver.answer.withLockedValue { $0 = (.movedPermanently, headers) }
            let before = receiver.received.withLockedValue { $0.count }
            let error = await #expect(throws: ArchiveError.self) { try await objects.delete(key: objects.key("x")) }
            #expect(error.map { "\($0)" }?.contains(expected) == true, "\(String(describing: error))")
            #expect(receiver.received.withLockedValue { $0.count } == before + 1, "one request, no redirect followed")
        }
        try await receiver.stop()
    }
}
