import Foundation
import GRDB
import Testing
@testable import HealthProbeServer
import HealthProbeTestSupport

/// What the object-storage suites share: reading the upload queue, waiting (a suspension,
/// never a blocked thread), and a store with a bucket of its own for each test.
/// Each suite's tests run one at a time, so that at most one store per suite runs: with five
/// at once beside the whole test run, two stopped answering requests for minutes.
protocol OffsiteSupport {}

/// How long a test waits for an upload or a registry snapshot: beside the whole suite in CI
/// (and the fuzzers beside it), the store has taken more than 90 s to grow its first volumes,
/// with a failed request retried after 15 s; alone, each test's waits end within seconds.
let offsiteWait: Double = 180

/// A wait that ran out.
struct OffsiteTimedOut: Error, CustomStringConvertible {
    let what: String
    var description: String { "timed out waiting for \(what)" }
}

/// A failure and the end of the server's log.
struct WithServerLog: Error, CustomStringConvertible {
    let error: any Error
    let log: String
    var description: String { "\(error)\n-- the server's log (end):\n\(log)" }
}

extension OffsiteSupport {
    /// The upload queue's rows not uploaded yet, and all rows, read from the registry.
    func queue(_ data: String) throws -> (pending: Int, all: Int, failedAttempts: Int) {
        try rawQueue(data + "/server.sqlite").read { db in
            (try Int.fetchOne(db, sql: "SELECT count(*) FROM offsite_uploads WHERE uploaded_at IS NULL")!,
             try Int.fetchOne(db, sql: "SELECT count(*) FROM offsite_uploads")!,
             try Int.fetchOne(db, sql: "SELECT coalesce(sum(attempts), 0) FROM offsite_uploads")!)
        }
    }

    /// The test's own requests to the store, tried again for up to 120 s (5 s each): its S3
    /// port answers before its filer and volume do, and a request can hang until they are up.
    func patiently<T>(_ settings: ObjectStoreSettings, _ request: (ObjectStore) async throws -> T) async throws -> T {
        let patient = ObjectStore(settings: settings, timeout: .seconds(5))
        let deadline = Date().addingTimeInterval(120)
        while true {
            do { return try await request(patient) } catch where Date() < deadline {
                try await Task.sleep(for: .milliseconds(500))
            }
        }
    }

    func createBucket(_ settings: ObjectStoreSettings) async throws { try await patiently(settings) { try await $0.createBucket() } }

    /// Polls `condition` every 200 ms (a suspension, never holding one of Swift's few
    /// cooperative threads the other tests' servers need) until it holds, or throws.
    func waitFor(_ what: String, seconds: Double = offsiteWait, _ condition: () throws -> Bool) async throws {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if (try? condition()) == true { return }
            try await Task.sleep(for: .milliseconds(200))
        }
        throw OffsiteTimedOut(what: what)
    }

    /// The store's settings and the server config naming it, under `prefix` of bucket `healthprobe`.
    func store(_ s3: SeaweedS3, prefix: String) -> (settings: ObjectStoreSettings, config: String) {
        (ObjectStoreSettings(endpoint: s3.endpoint, bucket: "healthprobe", prefix: prefix, region: "us-east-1",
                             accessKey: s3.accessKey, secretKey: s3.secretKey),
         """
         {"s3_endpoint": "\(s3.endpoint)", "s3_bucket": "healthprobe", "s3_prefix": "\(prefix)", "s3_region": "us-east-1",
          "s3_access_key": "\(s3.accessKey)", "s3_secret_key": "\(s3.secretKey)", "s3_snapshot_seconds": 5}
         """)
    }

    /// A new bucket's settings, config and client, under `prefix` of the store `s3`.
    func freshBucket(_ s3: SeaweedS3, prefix: String) async throws -> (settings: ObjectStoreSettings, config: String, objects: ObjectStore) {
        let (settings, config) = store(s3, prefix: prefix)
        try await createBucket(settings)
        return (settings, config, ObjectStore(settings: settings))
    }

    /// Runs `body` with a store of its own; a failure records the end of the store's own log.
    func withStore(_ body: (SeaweedS3) async throws -> Void) async throws {
        let s3 = try SeaweedS3()
        do { try await body(s3) } catch {
            Issue.record("\(error)\n-- the store's log (end):\n\(s3.logTail())")
        }
    }

    /// Runs `body`; what it throws carries the end of `server`'s log, which says what its uploads did meanwhile.
    func logging<T>(_ server: ServerProcess, _ body: () async throws -> T) async throws -> T {
        do { return try await body() } catch { throw WithServerLog(error: error, log: server.logTail()) }
    }

    /// Waits (at most `seconds`, then throws) for a complete registry snapshot under `prefix` begun
    /// after `time`: a snapshot is named by the time it began, before the registry is copied,
    /// so it holds every registry change made before `time`.
    func waitForSnapshot(_ objects: ObjectStore, prefix: String, after time: Double, seconds: Double = offsiteWait) async throws {
        let mark = prefix + "/" + OffsiteKeys.snapshot(at: time)
        let deadline = Date().addingTimeInterval(seconds)
        while try await !objects.list(prefix: prefix + "/snapshots/").contains(where: { $0.contains("/server.sqlite-") && $0 > mark }) {
            guard Date() < deadline else { throw OffsiteTimedOut(what: "a registry snapshot begun after \(mark)") }
            try await Task.sleep(for: .milliseconds(200))
        }
    }

    /// Waits (at most `seconds`, then throws) until more than `count` registry snapshots are under `prefix`.
    func waitForSnapshots(_ objects: ObjectStore, prefix: String, moreThan count: Int, seconds: Double = offsiteWait) async throws {
        let deadline = Date().addingTimeInterval(seconds)
        while try await objects.list(prefix: prefix + "/snapshots/").filter({ $0.contains("/server.sqlite-") }).count <= count {
            guard Date() < deadline else { throw OffsiteTimedOut(what: "a registry snapshot after the \(count) under \(prefix)") }
            try await Task.sleep(for: .milliseconds(200))
        }
    }
}
