import Foundation
import GRDB
import Testing
@testable import HealthProbeArchive
@testable import HealthProbeSimulator
import HealthProbeTestSupport

@Suite("Replica fidelity")
struct ReplicaTests {
    /// A node with a simulated history: edits, deletions, late insertions, consolidation,
    /// an unauthorized and a failed run.
    func history() throws -> TempHome {
        let t = TempHome()
        var o = SimulatorCapture.Options()
        o.seed = 9
        o.types = [SimulatedType.all[2], SimulatedType.all[8], SimulatedType.all[10], SimulatedType.all[15]]  // active energy consolidates after 45 days
        o.days = 44
        _ = try SimulatorCapture.run(home: t.home, options: o)
        o.days = 2
        for _ in 0..<4 { _ = try SimulatorCapture.run(home: t.home, options: o) }
        return t
    }

    @Test("every observation applied to a replica gives the node's chain-state digest; re-sends change nothing",
          arguments: [BundleApplier.IndexMode.maintained, .deferred])
    func fidelity(indexes: BundleApplier.IndexMode) throws {
        let t = try history()
        let node = try t.open()
        let replicaDir = TempDir()
        let replica = try Archive.open(path: replicaDir.file("replica.sqlite"))
        let count = try node.archive.writer.read { db in try Int64.fetchOne(db, sql: "SELECT count(*) FROM observations") ?? 0 }
        #expect(count == 5)
        var previous: String?
        var consolidationSeen = false
        for obs in Int64(1)...count {
            let (lines, hash) = try bundleLines(node, obs, previous: previous)
            let outcome = try BundleApplier.apply(replica, lines: lines, manifestHash: hash, now: 1, indexes: indexes)
            guard case .applied(let replicaObs, let seq) = outcome else { Issue.record("not applied: \(outcome)"); return }
            #expect(seq == Int(obs))
            let a = try node.archive.writer.read { db in try ChainStateDigest.compute(db, observationID: obs) }
            let b = try replica.writer.read { db in try ChainStateDigest.compute(db, observationID: replicaObs) }
            #expect(a == b, "observation \(obs)")
            #expect(a.visibleCount > 0)
            #expect(try BundleApplier.apply(replica, lines: lines, manifestHash: hash, now: 2) == .alreadyApplied(sequence: Int(obs)))
            previous = hash
            consolidationSeen = consolidationSeen || lines.contains { String(decoding: $0, as: UTF8.self).contains("\"range_close\"") }
        }
        #expect(consolidationSeen)
        // Indexes built again are the schema's own, and hold every row (integrity_check compares them with their tables).
        let fresh = try Archive.inMemory()
        #expect(try BundleMeaningTests.indexes(replica) == BundleMeaningTests.indexes(fresh))
        #expect(try replica.writer.read { db in try String.fetchAll(db, sql: "PRAGMA integrity_check") } == ["ok"])
        // Every earlier observation still matches after later ones were applied.
        for obs in Int64(1)...count {
            let a = try node.archive.writer.read { db in try ChainStateDigest.compute(db, observationID: obs) }
            let b = try replica.writer.read { db in try ChainStateDigest.compute(db, observationID: obs) }
            #expect(a == b, "observation \(obs) after the whole chain")
        }
    }

    @Test("applying bundles keeps the replica connection's prepared statements: nothing on the way is a schema change")
    func statementsSurviveApplies() throws {
        let t = try history()
        let node = try t.open()
        let count = try node.archive.writer.read { db in try Int64.fetchOne(db, sql: "SELECT count(*) FROM observations") ?? 0 }
        #expect(count == 5)
        for prepared in [false, true] {
            let replicaDir = TempDir()
            let replica = try Archive.open(path: replicaDir.file("replica.sqlite"))
            if prepared { try replica.prepareForApplies() }  // as the server opens its replicas
            let probe = "SELECT count(*) FROM samples"
            var previous: String?
            var cached: Statement?
            var emptied = 0
            for obs in Int64(1)...count {
                let (lines, hash) = try bundleLines(node, obs, previous: previous)
                _ = try BundleApplier.apply(replica, lines: lines, manifestHash: hash, now: 1)
                previous = hash
                let statement = try replica.writer.write { db in try db.cachedStatement(sql: probe) }
                if let cached, statement !== cached { emptied += 1 }
                cached = statement
            }
            // Without it, creating each of the aggregates' TEMP tables is a schema change, once per connection.
            let temps = try replica.writer.write { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM temp.sqlite_master WHERE type = 'table'") ?? 0 }
            #expect(emptied <= (prepared ? 0 : temps), "prepared: \(prepared); the connection's statement cache was emptied \(emptied) times in \(count - 1) applies")
        }
    }

    @Test("a tampered, out-of-order or divergent bundle is refused and nothing of it is stored")
    func refusals() throws {
        let t = TempHome()
        try t.simulate(seed: SimulatorCapture.Options().seed, days: [2, 2], types: Array(SimulatedType.all.prefix(2)))
        let node = try t.open()
        let (b1, h1) = try bundleLines(node, 1, previous: nil)
        let (b2, h2) = try bundleLines(node, 2, previous: h1)
        let replicaDir = TempDir()
        let replica = try Archive.open(path: replicaDir.file("replica.sqlite"))
        func rows() throws -> Int { try replica.writer.read { db in try Int.fetchOne(db, sql: "SELECT (SELECT count(*) FROM samples) + (SELECT count(*) FROM observations) + (SELECT count(*) FROM bundle_log)") ?? 0 } }

        // Out of order: sequence 2 before 1.
        #expect { _ = try BundleApplier.apply(replica, lines: b2, manifestHash: h2, now: 1) } throws: {
            ($0 as? BundleApplier.ApplyError)?.code == .outOfOrder
        }
        #expect(try rows() == 0)
        // A flipped value: the payload hash catches it; nothing stored.
        var bad = b1
        let v = bad.firstIndex { String(decoding: $0, as: UTF8.self).contains("\"kind\":\"version\"") }!
        bad[v] = Array(String(decoding: bad[v], as: UTF8.self).replacingOccurrences(of: "\"numeric_value\":", with: "\"numeric_value\":9").utf8)
        #expect { _ = try BundleApplier.apply(replica, lines: bad, manifestHash: h1, now: 1) } throws: { ($0 as? BundleError)?.code == .payloadHash }
        #expect(try rows() == 0)
        // Truncated: no trailer.
        #expect { _ = try BundleApplier.apply(replica, lines: Array(b1.dropLast()), manifestHash: h1, now: 1) } throws: { ($0 as? BundleError)?.code == .malformed }
        #expect(try rows() == 0)
        // The real one applies; a different bundle claiming the same position is divergence.
        _ = try BundleApplier.apply(replica, lines: b1, manifestHash: h1, now: 1)
        let after = try rows()
        #expect { _ = try BundleApplier.apply(replica, lines: b2, manifestHash: h1, now: 1) } throws: { _ in true }
        var fork = b1
        fork[1] = Array(String(decoding: fork[1], as: UTF8.self).replacingOccurrences(of: "\"status\":\"completed\"", with: "\"status\":\"failed\"").utf8)
        var v2 = BundleVerifier()
        for l in fork { try v2.feed(l) }
        let forkHash = try v2.finish(expected: nil).sequence == 1 ? v2.manifestHash! : ""
        #expect { _ = try BundleApplier.apply(replica, lines: fork, manifestHash: forkHash, now: 1) } throws: {
            ($0 as? BundleApplier.ApplyError)?.code == .divergence
        }
        #expect(try rows() == after)
        #expect(try BundleApplier.apply(replica, lines: b2, manifestHash: h2, now: 1) == .applied(observationID: 2, sequence: 2))
    }

    @Test("deferred indexes are built table by table as the bundle's kinds end: refused at its end, after some were built, the replica keeps its indexes and stores nothing; applied, it has every index as its schema makes it")
    func deferredIndexesBuiltAsKindsEnd() throws {
        let t = TempHome()
        try t.simulate(seed: SimulatorCapture.Options().seed, days: [3], types: Array(SimulatedType.all.prefix(3)))
        let (b1, h1) = try bundleLines(try t.open(), 1, previous: nil)
        let replicaDir = TempDir()
        let replica = try Archive.open(path: replicaDir.file("replica.sqlite"))
        func indexes() throws -> [[String]] {
            try replica.writer.read { db in try Row.fetchAll(db, sql: "SELECT name, sql FROM sqlite_schema WHERE type = 'index' AND sql IS NOT NULL ORDER BY name").map { [$0[0], $0[1]] } }
        }
        let schema = try indexes()
        #expect(schema.contains { $0[0] == SampleIndexes.byUUID } && schema.contains { $0[0] == "idx_events_sample" })
        // No trailer: refused once every item is in, the sample, version and event indexes built by then.
        #expect { _ = try BundleApplier.apply(replica, lines: Array(b1.dropLast()), manifestHash: h1, now: 1, indexes: .deferred) } throws: {
            ($0 as? BundleError)?.code == .malformed
        }
        #expect(try indexes() == schema)
        #expect(try replica.writer.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM samples") } == 0)
        #expect(try BundleApplier.apply(replica, lines: b1, manifestHash: h1, now: 1, indexes: .deferred) == .applied(observationID: 1, sequence: 1))
        #expect(try indexes() == schema)
        #expect(try ArchiveVerifier.databaseChecks(replica, mode: .full).filter { $0.status == .problem }.isEmpty)
    }

    @Test("indexes are deferred only for a bundle likely to add at least as many samples as the replica holds, and never below 20,000")
    func deferralDecision() {
        let perSample = DeferredIndexes.bundleBytesPerSample
        #expect(!DeferredIndexes.worthDeferring(.maintained, samplesBefore: 0))
        #expect(DeferredIndexes.worthDeferring(.deferred, samplesBefore: 5_000_000))
        // A chain's first sync of a million samples (1.74 GB of bundle).
        #expect(DeferredIndexes.worthDeferring(.automatic(bundleBytes: 1_740_000_000), samplesBefore: 0))
        #expect(DeferredIndexes.worthDeferring(.automatic(bundleBytes: 20_000 * perSample), samplesBefore: 20_000))
        #expect(!DeferredIndexes.worthDeferring(.automatic(bundleBytes: 20_000 * perSample), samplesBefore: 20_001))
        #expect(!DeferredIndexes.worthDeferring(.automatic(bundleBytes: 20_000 * perSample - 1), samplesBefore: 0))
        // An incremental bundle of a household node.
        #expect(!DeferredIndexes.worthDeferring(.automatic(bundleBytes: 1_830_000), samplesBefore: 0))
    }
}
