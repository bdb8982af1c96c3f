import Foundation
import NIOCore
import Testing
@testable import HealthProbeArchive
@testable import HealthProbeServer
import HealthProbeProtocol
import HealthProbeNode
import HealthProbeTestSupport

/// What a running server owns and what it lets others do beside it: concurrent
/// readers, refusals recorded, leftovers swept, and tools that leave its files alone.
@Suite("Server robustness")
struct ServerRobustnessTests {
    @Test("concurrent HOUSEHOLD and CHAIN_STATUS requests all succeed while bundles are applied")
    func concurrentReaders() async throws {
        let data = TempDir()
        let homes = (0..<3).map { _ in TempHome() }
        for (i, h) in homes.enumerated() { try simulate(h, days: 1 + i) }
        var enrollments: [NodeEnrollment] = []
        try await withServer(data) { server in
            // An admin's devices: each reads every chain of the household.
            try server.store.registry().addPerson(name: "ann", role: .admin, password: nil, now: 1)
            for i in homes.indices {
                let e = try await server.enroll("d\(i)", person: "ann")
                enrollments.append(e)
                _ = try await SyncClient(node: try homes[i].open(), outbox: homes[i].root + "/outbox").sync(e)
            }
            // More captures to apply while readers run.
            for h in homes { try simulate(h, days: 1) }
            let port = server.port
            let failures = try await withThrowingTaskGroup(of: String?.self) { group in
                for (i, e) in enrollments.enumerated() {
                    let client = SyncClient(node: try homes[i].open(), outbox: homes[i].root + "/outbox")
                    group.addTask {
                        do { _ = try await client.sync(e); return nil } catch { return "sync: \(error)" }
                    }
                }
                for round in 0..<24 {
                    let e = enrollments[round % enrollments.count]
                    group.addTask { await Self.household(e, port: port, chains: 3) }
                }
                return try await Self.failures(&group)
            }
            #expect(failures.isEmpty, "\(failures.count) of 27 failed: \(failures.prefix(3))")
        }
        // A restarted server keeps no replica open: every reader opens its own, all at once.
        try await withServer(data) { server in
            let (e, port) = (enrollments[0], server.port)
            let failures = try await withThrowingTaskGroup(of: String?.self) { group in
                for _ in 0..<16 { group.addTask { await Self.household(e, port: port, chains: 3) } }
                return try await Self.failures(&group)
            }
            #expect(failures.isEmpty, "after a restart, \(failures.count) of 16 failed: \(failures.prefix(3))")
        }
    }

    /// One HOUSEHOLD request: nil when it lists `chains` chains, else what went wrong.
    static func household(_ e: NodeEnrollment, port: Int, chains: Int) async -> String? {
        do {
            let r = try await SyncClient.household(e, host: "127.0.0.1", port: port, type: nil, from: nil, to: nil, clientTime: Date().timeIntervalSince1970)
            return r.chains.count == chains ? nil : "household: \(r.chains.count) chains"
        } catch { return "household: \(error)" }
    }

    /// The failures the group's tasks reported.
    static func failures(_ group: inout ThrowingTaskGroup<String?, any Error>) async throws -> [String] {
        var out: [String] = []
        for try await f in group { if let f { out.append(f) } }
        return out
    }

    @Test("a CHAIN_STATUS_REQUEST for another device's chain is forbidden and recorded for the administrator")
    func forbiddenStatusRecorded() async throws {
        let data = TempDir()
        let a = TempHome()
        try simulate(a, days: 1)
        let chain = try a.open().deviceChainHash
        try await withServer(data) { server in
            let ea = try await server.enroll("a"), eb = try await server.enroll("b")
            _ = try await SyncClient(node: try a.open(), outbox: a.root + "/outbox").sync(ea)
            let reply = try await server.raw(try wire([try authFrame(eb), try .json(.chainStatusRequest, .object(["device_chain_hash": .string(chain)]))]),
                                             until: "forbidden")
            let text = String(decoding: reply, as: UTF8.self)
            #expect(text.contains("forbidden") && !text.contains("last_sequence"), "\(text)")
            let events = try server.store.registry().events(chain: chain)
            #expect(events.contains { $0.kind == "forbidden" && $0.device == "b" && $0.sequence == nil && $0.detail.contains("CHAIN_STATUS_REQUEST") }, "\(events)")
        }
    }

    @Test("one server per data directory; what a stopped server left in quarantine is swept when the next starts")
    func lockAndSweep() async throws {
        let data = TempDir()
        let store = ServerStore(root: data.path)
        try store.create()
        try FileManager.default.createDirectory(atPath: store.quarantineDirectory, withIntermediateDirectories: true)
        let leftover = store.quarantineDirectory + "/left-by-a-killed-server.jsonl"
        try Data("{}\n".utf8).write(to: URL(fileURLWithPath: leftover))
        try await withServer(data) { server in
            #expect(!FileManager.default.fileExists(atPath: leftover), "the leftover is swept before the server listens")
            let second = try SyncServer(store: server.store)
            await #expect { try await second.run(host: "127.0.0.1", port: 0) } throws: { ($0 as? ArchiveError)?.code == .locked }
        }
    }

    @Test("verify beside a running server moves and deletes none of its files; with the server stopped it settles them")
    func verifyBesideServer() async throws {
        let data = TempDir()
        let a = TempHome()
        try simulate(a, days: 1)
        var incoming = ""
        try await withServer(data) { server in
            let e = try await server.enroll("a")
            _ = try await SyncClient(node: try a.open(), outbox: a.root + "/outbox").sync(e)
            let chain = try #require(try server.store.chains().first)
            // An apply in flight: its bundle kept as `.incoming`, not yet in the log.
            incoming = server.store.bundlePath(chain, sequence: 2) + ".incoming"
            try Data("{}\n".utf8).write(to: URL(fileURLWithPath: incoming))
            let report = try ServerVerifier.run(server.store, mode: .full)
            #expect(report.allSatisfy { $0.ok }, "\(report)")
            #expect(FileManager.default.fileExists(atPath: incoming), "verify deleted a file the running server owns")
        }
        // Stopped: an `.incoming` file the log does not hold is a bundle that never committed.
        let report = try ServerVerifier.run(ServerStore(root: data.path), mode: .quick)
        #expect(report.allSatisfy { $0.ok })
        #expect(!FileManager.default.fileExists(atPath: incoming))
    }
}
