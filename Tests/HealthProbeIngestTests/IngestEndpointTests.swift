import Foundation
import HealthProbeArchive
import HealthProbeCanonical
import HealthProbeIngest
import HealthProbeTestSupport
import Testing

/// The Health Auto Export endpoint over real HTTPS on 127.0.0.1: keys, settings, limits,
/// duplicates, windows, lateness, concurrency, and bodies a stop left unrecorded.
@Suite("Ingest endpoint", .serialized)
struct IngestEndpointTests {
    static let hour = 3600.0
    /// Yesterday's 24 hourly step points, UTC days.
    static func yesterday(_ now: Double, skipping: Int? = nil) -> [UInt8] {
        let midnight = (now / 86_400).rounded(.down) * 86_400
        return HAESynthetic.points("step_count", "count", at: (0..<24).filter { $0 != skipping }.map { midnight - 86_400 + Double($0) * hour })
    }

    @Test("no key, a wrong key or a revoked key is 401 before the body is read; Bearer and api-key both work; bad settings and bodies are 400 naming what and where; too large is 413")
    func refusals() async throws {
        try await withIngest(settings: { var s = IngestServer.Settings(); s.maxBodyBytes = 4096; return s }()) { n in
            let body = Self.yesterday(Date().timeIntervalSince1970)
            #expect(try await n.post(body, key: "").status == 401)
            let wrong = try await n.post(body, key: "hpk_" + String(repeating: "0", count: 64))
            #expect(wrong.status == 401 && (wrong.json["error"] as? String ?? "").contains("Authorization: Bearer"))
            #expect(!FileManager.default.fileExists(atPath: n.homes.automation("phone").archivePath))
            #expect(try await n.post(body, query: "period=weekly").json["error"] as? String == "period= must be one of default, since_last_sync, today, yesterday, previous_7_days")
            #expect(try await n.post(body, query: "aggregation=seconds").status == 400)
            let bad = try await n.post(Array("{\"data\":{\"metrics\":[{\"name\":\"step_count\",\"units\":\"count\",\"data\":[{\"qty\":\"many\",\"date\":\"2025-01-01 00:00:00 +0000\"}]}]}}".utf8))
            #expect(bad.status == 400)
            #expect((bad.json["error"] as? String ?? "").contains("data.metrics[0].data[0].qty"), "\(bad.json)")
            #expect(try await n.post([UInt8](repeating: 0x20, count: 5000)).status == 413)
            let directory = n.homes.automation("phone").root + "/bodies"
            #expect(((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).allSatisfy { !$0.hasPrefix(".incoming-") }, "a refused body left its file")
            let viaHeader = try await n.post(body, query: "period=yesterday&aggregation=none", header: "api-key")
            #expect(viaHeader.status == 200 && viaHeader.json["status"] as? String == "recorded", "\(viaHeader.json)")
            _ = try IngestKeys(keys: ArchiveHome(root: n.root).keyStore).revoke(name: "phone")
            #expect(try await n.post(body).status == 401)
        }
    }

    @Test("a body that does not arrive within the body timeout is 408; nothing of it stays on disk and nothing is recorded")
    func slowBody() async throws {
        try await withIngest(settings: { var s = IngestServer.Settings(); s.bodyTimeout = .seconds(3); return s }()) { n in
            let body = Self.yesterday(Date().timeIntervalSince1970)
            let status = try await n.postSlowly(body, pause: .seconds(8))
            #expect(status == 408, "\(status)")
            let directory = n.homes.automation("phone").root + "/bodies"
            #expect(((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).allSatisfy { !$0.hasPrefix(".incoming-") && !$0.hasSuffix(".received.json") })
            #expect(try await n.post(body).status == 200, "a whole post afterwards is recorded")
        }
    }

    @Test("the same window posted 50 times: one observation, 49 duplicates that record nothing; the body is kept under its SHA-256")
    func fiftyPosts() async throws {
        try await withIngest { n in
            let body = Self.yesterday(Date().timeIntervalSince1970)
            var statuses: [String] = []
            for _ in 0..<50 {
                let r = try await n.post(body, query: "period=yesterday&aggregation=none")
                #expect(r.status == 200)
                statuses.append(r.json["status"] as? String ?? "?")
            }
            #expect(statuses.filter { $0 == "recorded" }.count == 1 && statuses.filter { $0 == "duplicate" }.count == 49)
            #expect(try await n.observationCount("phone") == 1)
            let sha = BodyStore.sha256(body)
            #expect(FileManager.default.contents(atPath: n.homes.automation("phone").root + "/bodies/\(sha).json").map { [UInt8]($0) } == body)
        }
    }

    @Test("a closed window re-read without one sample: it disappeared; a since_last_sync push without it: nothing disappears")
    func windows() async throws {
        try await withIngest { n in
            let now = Date().timeIntervalSince1970
            let first = try await n.post(Self.yesterday(now), query: "period=yesterday&aggregation=none")
            #expect(first.json["appeared"] as? Int == 24)
            let gap = try await n.post(Self.yesterday(now, skipping: 5), query: "period=since_last_sync&aggregation=none")
            #expect(gap.json["disappeared"] as? Int == 0 && gap.json["status"] as? String == "recorded", "\(gap.json)")
            let closed = try await n.post(Self.yesterday(now, skipping: 7), query: "period=yesterday&aggregation=none")
            #expect(closed.json["disappeared"] as? Int == 1, "\(closed.json)")
        }
    }

    @Test("a resting heart rate written 11 hours late is recorded as late (first seen minus its time), not lost")
    func late() async throws {
        let now = Date().timeIntervalSince1970
        try await withIngest { n in
            let body = HAESynthetic.points("resting_heart_rate", "count/min", at: [now - 11 * Self.hour], qty: 52)
            let r = try await n.post(body, query: "period=since_last_sync&aggregation=none")
            #expect(r.status == 200)
            let sha = BodyStore.sha256(body)
            let recorded = try #require(try n.homes.bodies("phone").recorded(sha))
            let lateness = try #require(recorded.latenessByType["HKQuantityTypeIdentifierRestingHeartRate"])
            #expect(lateness > 10.9 * Self.hour && lateness < 11.1 * Self.hour, "\(lateness)")
            #expect(recorded.disappeared == 0)
        }
    }

    @Test("eight posts at once each wait their turn: eight observations, none lost")
    func concurrent() async throws {
        try await withIngest { n in
            let now = Date().timeIntervalSince1970
            let codes = try await withThrowingTaskGroup(of: Int.self) { group in
                for i in 0..<8 {
                    group.addTask { try await n.post(HAESynthetic.points("step_count", "count", at: [now - Double(i + 1) * 60], qty: Double(i + 1)),
                                                     query: "period=since_last_sync&aggregation=none").status }
                }
                return try await group.reduce(into: [Int]()) { $0.append($1) }
            }
            #expect(codes == Array(repeating: 200, count: 8))
            #expect(try await n.observationCount("phone") == 8)
        }
    }

    @Test("a body kept before a stop but never recorded is recorded at the next start, once; posting it again then is a duplicate; one cut off while arriving is removed")
    func keptBeforeAStop() async throws {
        let dir = TempDir()
        let root = dir.path + "/home"
        let now = Date().timeIntervalSince1970
        let body = Self.yesterday(now)
        // As a SIGKILL between keeping and recording leaves it: the body and its arrival, no outcome.
        _ = try ArchiveHome(root: root).open()
        let store = CaptureHomes(home: ArchiveHome(root: root)).bodies("phone")
        let arrived = try await IncomingBody.write(body, into: store.directory)
        #expect(arrived.sha256 == BodyStore.sha256(body) && arrived.bytes == body.count)
        try store.adopt(arrived, .init(sha256: arrived.sha256, bytes: body.count, receivedAt: now, period: "yesterday", aggregation: "none", utcOffsetSeconds: 0))
        #expect(try store.pending().count == 1)
        // And a body a stop cut off while it arrived: removed at the start, never recorded.
        try Data("{\"data\": {\"metr".utf8).write(to: URL(fileURLWithPath: store.directory + "/.incoming-cut-off"))
        try await withIngest(root: root) { (n: IngestNode) async throws -> Void in
            let pending = try store.pending()
            #expect(pending.isEmpty)
            #expect(!FileManager.default.fileExists(atPath: store.directory + "/.incoming-cut-off"))
            #expect(try await n.observationCount("phone") == 1)
            let recorded = try store.recorded(BodyStore.sha256(body))
            #expect(recorded?.appeared == 24)
        }
    }
}
