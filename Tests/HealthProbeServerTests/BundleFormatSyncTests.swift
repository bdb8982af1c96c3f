import Foundation
import Testing
@testable import HealthProbeArchive
import HealthProbeCanonical
@testable import HealthProbeServer
import HealthProbeProtocol
import HealthProbeNode
import HealthProbeTestSupport

/// Bundle format 2 over the wire (Protocol/README.md section 8.5): a real server on
/// 127.0.0.1 over TLS, stopped and started again on the same data with other versions.
/// A value set inside one server's run and read after it.
private final class Box<T: Sendable>: @unchecked Sendable {
    var value: T?
}

@Suite("Bundle format 2 over the wire (protocol version 4)")
struct BundleFormatSyncTests {
    /// The `bundle_format` in the header of the kept bundle at `sequence`.
    static func keptFormat(_ store: ServerStore, _ chain: String, _ sequence: Int) throws -> Int? {
        let path = try #require(store.storedBundlePath(chain, sequence: sequence))
        var lines = try StoredBundleLines(path: path)
        let first = lines.next()
        let header = try #require(first)
        return try BundleVerifier.header(header).bundleFormat
    }

    static func sync(_ home: TempHome, _ e: NodeEnrollment, port: Int) async throws -> SyncClient.Report {
        try await SyncClient(node: try home.open(), outbox: home.root + "/outbox").sync(e, host: "127.0.0.1", port: port)
    }

    static func restore(_ home: TempHome, _ e: NodeEnrollment, port: Int, version: UInt16 = SyncHello.bundleFormatVersion) async throws -> NodeRestore.Report {
        var restore = NodeRestore(node: try home.open())
        restore.version = version
        return try await restore.restore(e, host: "127.0.0.1", port: port)
    }

    /// The first sequence the node's archive records as format 2.
    static func format2From(_ node: NodeArchive) throws -> Int? {
        try node.archive.writer.read { db in try ArchiveMetadataRecord.bundleFormat2From(db) }
    }

    @Test("a node sends format 1 to a server of versions 1 to 3 and format 2 from its first bundle with one of version 4, and never goes back: to the older server again it stops and says to upgrade; a node restoring with version 3 gets the format-1 bundles and is refused the first of format 2 (nothing of it stored), then restores the rest with version 4; every bundle builds again as it was sent")
    func formats() async throws {
        let home = TempHome()
        try simulate(home, days: 2)
        let data = TempDir()
        let chain = try home.open().deviceChainHash
        let enrolled = Box<NodeEnrollment>()
        func sync(_ server: TestServer) async throws -> SyncClient.Report {
            try await Self.sync(home, try #require(enrolled.value), port: server.port)
        }
        try await withServer(data, versions: 1...3) { server in
            enrolled.value = try await server.enroll("phone")
            let report = try await sync(server)
            #expect(report.sent == 1)
            #expect(try Self.keptFormat(server.store, chain, 1) == 1)
        }
        let enrollment = enrolled.value
        #expect(try Self.format2From(try home.open()) == nil)
        try simulate(home, days: 1)
        try simulate(home, days: 1)
        try await withServer(data) { server in
            let report = try await sync(server)
            #expect(report.sent == 2)
            #expect(try Self.keptFormat(server.store, chain, 2) == 2)
            #expect(try Self.keptFormat(server.store, chain, 3) == 2)
        }
        #expect(try Self.format2From(try home.open()) == 2)
        let original = try NodeRestoreTests.states(try home.open())
        try simulate(home, days: 1)
        try await withServer(data, versions: 1...3) { server in
            await #expect { _ = try await sync(server) } throws: {
                ($0 as? SyncProtocolError)?.code == .protocolVersion && "\($0)".contains("Upgrade hp-server")
            }
        }
        // Every bundle the node sent builds again to the hash it was sent with.
        #expect(try ArchiveVerifier.sentBundles(try home.open()).status == .ok)

        try home.home.reset(newChain: false)
        try await withServer(data) { server in
            let e = try #require(enrollment)
            await #expect { _ = try await Self.restore(home, e, port: server.port, version: SyncHello.streamVersion) } throws: {
                ($0 as? SyncProtocolError)?.code == .protocolVersion && "\($0)".contains("upgrade hp-node")
            }
            // The format-1 bundle before it was restored; nothing of the refused one.
            #expect(try NodeRestoreTests.states(try home.open()) == Array(original.prefix(1)))
            let report = try await Self.restore(home, e, port: server.port)
            #expect(report.restored == 2)
        }
        let node = try home.open()
        #expect(try NodeRestoreTests.states(node) == original)
        #expect(try Self.format2From(node) == 2)
        #expect(try ArchiveVerifier.sentBundles(node).status == .ok)
    }
}

extension BundleFormatSyncTests {
    @Test("bundles a node sent in format 1 go again in format 1 to a server restored from an older backup, with version 4, and format 2 begins after them: the node's log and the server agree, and the next syncs find nothing diverged")
    func resentAsSent() async throws {
        let home = TempHome()
        try simulate(home, days: 2)
        let data = TempDir(), backup = TempDir()
        let chain = try home.open().deviceChainHash
        let enrolled = Box<NodeEnrollment>()
        try await withServer(data, versions: 1...3) { server in
            enrolled.value = try await server.enroll("phone")
            let report = try await Self.sync(home, try #require(enrolled.value), port: server.port)
            #expect(report.sent == 1)
        }
        // The stopped server's data directory, holding bundle 1: a backup.
        try FileManager.default.removeItem(atPath: backup.path)
        try FileManager.default.copyItem(atPath: data.path, toPath: backup.path)
        try simulate(home, days: 1)
        try simulate(home, days: 1)
        let e = try #require(enrolled.value)
        try await withServer(data, versions: 1...3) { server in
            let report = try await Self.sync(home, e, port: server.port)
            #expect(report.sent == 2)
        }
        // The server restored from the backup, now of version 4: bundles 2 and 3 again, as they were sent.
        try simulate(home, days: 1)
        try await withServer(backup) { server in
            let first = try await Self.sync(home, e, port: server.port)
            #expect(first.sent == 3)
            #expect(try Self.keptFormat(server.store, chain, 2) == 1)
            #expect(try Self.keptFormat(server.store, chain, 3) == 1)
            #expect(try Self.keptFormat(server.store, chain, 4) == 2)
            let again = try await Self.sync(home, e, port: server.port)
            #expect(again.sent == 0 && again.lastSequence == 4)
        }
        #expect(try Self.format2From(try home.open()) == 4)
        #expect(try ArchiveVerifier.sentBundles(try home.open()).status == .ok)
    }
}
