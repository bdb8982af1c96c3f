import Foundation
import GRDB
import Testing
@testable import HealthProbeArchive
import HealthProbeCanonical
@testable import HealthProbeSimulator
import HealthProbeTestSupport

@Suite("Simulator")
struct SimulatorTests {
    /// Two homes sharing one key directory, so their hashes are comparable.
    func twoHomes() throws -> (TempHome, TempHome) {
        let a = TempHome(), b = TempHome()
        _ = try a.open()
        try FileManager.default.createDirectory(atPath: b.root, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: a.root + "/keys", toPath: b.root + "/keys")
        return (a, b)
    }

    /// The visible (type, identity, payload hash) triples (identity: the UUID hash, else the fingerprint;
    /// a UUID sample's fingerprint is its content at first sight, which depends on stepping) of the latest state, in order,
    /// leaving out the types whose unauthorized/failed runs depend on the capture number.
    func visible(_ home: ArchiveHome) throws -> [String] {
        let node = try home.open(mode: .readOnly)
        let skipped = SimulatedType.all.filter { $0.unauthorizedEvery > 0 || $0.failsEvery > 0 }.map(\.identifier)
        return try node.archive.writer.read { db in
            try String.fetchAll(db, sql: """
                SELECT st.type_identifier || ' ' || lower(hex(coalesce(s.sample_uuid_hash, s.strict_fingerprint))) || ' ' || lower(hex(v.payload_hash))
                FROM sample_visibility_ranges r JOIN samples s ON s.id = r.sample_id
                JOIN sample_versions v ON v.id = r.version_id JOIN sample_types st ON st.id = s.sample_type_id
                WHERE r.last_observation_id IS NULL AND st.type_identifier NOT IN (?, ?) ORDER BY 1
                """, arguments: [skipped[0], skipped[1]])
        }
    }

    /// Compares two visible states, reporting only a short summary.
    func expectSame(_ a: [String], _ b: [String], _ what: String) {
        if a == b { return }
        let sa = Set(a), sb = Set(b)
        let onlyA = sa.subtracting(sb).sorted().prefix(3), onlyB = sb.subtracting(sa).sorted().prefix(3)
        Issue.record("\(what): \(a.count) vs \(b.count) visible; only first: \(Array(onlyA)); only second: \(Array(onlyB))")
    }

    func options(seed: UInt64 = 3, days: Int, fullScan: Bool = false) -> SimulatorCapture.Options {
        var o = SimulatorCapture.Options()
        o.seed = seed
        o.days = days
        o.fullScan = fullScan
        o.pageSize = 700
        return o
    }

    @Test("same seed, same history: the generated stream is identical byte for byte")
    func deterministicStream() throws {
        let p = SimulatedPerson(seed: 42)
        func stream() throws -> [UInt8] {
            var out: [UInt8] = []
            let normalizer = SampleNormalizer(hasher: ArchiveHasher(secret: [UInt8](repeating: 9, count: 32)))
            for t in SimulatedType.all {
                try p.delta(t, from: 20, to: 70, added: { s in
                    out += try SampleEncoding.payload(normalizer.normalize(s, typeIdentifier: t.identifier))
                    out += Array((s.uuid ?? "").utf8)
                }, deleted: { out += Array($0.utf8) })
            }
            return out
        }
        let a = try stream(), b = try stream()
        #expect(a.count > 100_000)
        #expect(a == b)
        let other = SimulatedPerson(seed: 43)
        var c = 0
        other.delta(SimulatedType.all[0], from: 20, to: 21, added: { _ in c += 1 }, deleted: { _ in })
        #expect(c > 0)
    }

    @Test("how the timeline is stepped does not change the state it reaches")
    func steppingIndependence() throws {
        let (a, b) = try twoHomes()
        _ = try SimulatorCapture.run(home: a.home, options: options(days: 20))
        for _ in 0..<4 { _ = try SimulatorCapture.run(home: b.home, options: options(days: 5)) }
        let va = try visible(a.home), vb = try visible(b.home)
        #expect(va.count > 5000)
        expectSame(va, vb, "20 days at once vs 4 x 5 days")
    }

    @Test("anchored captures and full-scan captures reach the same visible state")
    func anchoredEqualsFullScan() throws {
        let (a, b) = try twoHomes()
        for step in [10, 3, 40, 2] {
            _ = try SimulatorCapture.run(home: a.home, options: options(days: step))
            _ = try SimulatorCapture.run(home: b.home, options: options(days: step, fullScan: true))
        }
        // Anchored runs of types that failed or were unauthorized catch up later; check after a clean capture.
        _ = try SimulatorCapture.run(home: a.home, options: options(days: 1))
        _ = try SimulatorCapture.run(home: b.home, options: options(days: 1, fullScan: true))
        let va = try visible(a.home), vb = try visible(b.home)
        #expect(va.count > 10_000)
        expectSame(va, vb, "anchored vs full scan")
    }

    @Test("edits, deletions, late insertions, consolidation and unauthorized/failed runs all occur")
    func behaviours() throws {
        let t = TempHome()
        var outcomes: [SimulatorCapture.Outcome] = []
        outcomes.append(try SimulatorCapture.run(home: t.home, options: options(days: 30)))
        for _ in 0..<5 { outcomes.append(try SimulatorCapture.run(home: t.home, options: options(days: 5))) }
        let node = try t.open()
        let kinds = try node.archive.writer.read { db in
            try Row.fetchAll(db, sql: "SELECT \(EventKind.nameSQL("event_kind")), \(EvidenceKind.nameSQL("evidence_kind")), count(*) AS n FROM sample_observation_events GROUP BY 1, 2")
                .reduce(into: [String: Int]()) { $0["\($1[0] as String)/\($1[1] as String)"] = $1["n"] }
        }
        #expect((kinds["representation_changed/reported"] ?? 0) > 0, "edits: \(kinds)")
        #expect((kinds["disappeared/hk_deleted_object"] ?? 0) > 0, "deletions: \(kinds)")
        // Capture 4 has BodyMass unauthorized; capture 5 has RespiratoryRate failing after its first page.
        #expect(outcomes[3].status == .partialUnauthorized)
        #expect(outcomes[3].runs.contains { $0.typeIdentifier.hasSuffix("BodyMass") && $0.status == .unauthorized })
        #expect(outcomes[4].status == .partialFailed)
        #expect(outcomes[4].runs.contains { $0.typeIdentifier.hasSuffix("RespiratoryRate") && $0.status == .failed })
        // Day 55 passed: heart-rate days older than 45 days were consolidated into hourly samples.
        let hourly = try node.archive.writer.read { db in
            try Int.fetchOne(db, sql: """
                SELECT count(*) FROM sample_versions v JOIN samples s ON s.id = v.sample_id JOIN sample_types st ON st.id = s.sample_type_id
                WHERE st.type_identifier = 'HKQuantityTypeIdentifierHeartRate' AND v.end_date - v.start_date = 3600
                """)
        }
        #expect((hourly ?? 0) > 100)
        // Time zones change with travel, and every observation records one.
        let zones = try node.archive.writer.read { db in try String.fetchAll(db, sql: "SELECT DISTINCT time_zone_identifier FROM observations") }
        #expect(zones.count >= 1)
        #expect(SimulatedPerson(seed: 1).timeZone(at: 65).identifier == "America/New_York")
    }

    @Test("a different seed on an existing archive is refused")
    func seedMismatch() throws {
        let t = TempHome()
        _ = try SimulatorCapture.run(home: t.home, options: options(seed: 1, days: 1))
        #expect { _ = try SimulatorCapture.run(home: t.home, options: options(seed: 2, days: 1)) } throws: {
            ($0 as? ArchiveError)?.message.contains("--seed 1") == true
        }
    }

    @Test("without its position (an archive restored from the server), the timeline goes on from the last capture's notes, with its seed held to them; other notes are not a position")
    func positionFromNotes() throws {
        let t = TempHome()
        _ = try SimulatorCapture.run(home: t.home, options: options(seed: 7, days: 2))
        _ = try SimulatorCapture.run(home: t.home, options: options(seed: 7, days: 3))
        // What a restore leaves: the observations (their notes among them), not the simulator's metadata.
        try t.open().archive.writer.write { db in try db.execute(sql: "DELETE FROM archive_metadata WHERE key LIKE 'simulator.%'") }
        #expect { _ = try SimulatorCapture.run(home: t.home, options: options(seed: 8, days: 1)) } throws: {
            ($0 as? ArchiveError)?.message.contains("--seed 7") == true
        }
        let next = try SimulatorCapture.run(home: t.home, options: options(seed: 7, days: 1))
        #expect(next.throughDay == 6)
        #expect(SimulatorCapture.position(notes: "simulated capture seed=7 day=6").map { [$0.seed, UInt64($0.day)] } == [7, 6])
        for notes in ["simulated capture seed=7", "simulated capture seed=-1 day=6", "simulated capture seed=7 day=99999999", "imported seed=7 day=6", ""] {
            #expect(SimulatorCapture.position(notes: notes) == nil, "\(notes)")
        }
        // Notes that name no position: said, not a timeline started over behind the archive's anchors.
        try t.open().archive.writer.write { db in
            try db.execute(sql: "DELETE FROM archive_metadata WHERE key LIKE 'simulator.%'")
            try db.execute(sql: "UPDATE observations SET notes = 'edited' WHERE id = (SELECT max(id) FROM observations)")
        }
        #expect { _ = try SimulatorCapture.run(home: t.home, options: options(seed: 7, days: 1)) } throws: {
            ($0 as? ArchiveError)?.message.contains("reset the archive") == true
        }
    }
}

@Suite("SplitMix")
struct SplitMixTests {
    /// The earlier implementation, kept as the oracle: simulated histories must not change.
    static func referenceUUID(_ a: UInt64, _ b: UInt64) -> String {
        let hex = Array("0123456789ABCDEF".utf8)
        var out = [UInt8]()
        var bytes = [UInt8](repeating: 0, count: 16)
        for i in 0..<8 { bytes[i] = UInt8(truncatingIfNeeded: a >> (8 * UInt64(i))) }
        for i in 0..<8 { bytes[8 + i] = UInt8(truncatingIfNeeded: b >> (8 * UInt64(i))) }
        bytes[6] = (bytes[6] & 0x0F) | 0x40
        bytes[8] = (bytes[8] & 0x3F) | 0x80
        for (i, byte) in bytes.enumerated() {
            if i == 4 || i == 6 || i == 8 || i == 10 { out.append(UInt8(ascii: "-")) }
            out.append(hex[Int(byte >> 4)])
            out.append(hex[Int(byte & 0xF)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    @Test("UUIDs are the earlier implementation's, character for character, and parse as UUIDs")
    func uuids() {
        var h: UInt64 = 0x1234
        for i in 0..<20_000 {
            h = SplitMix.mix(h &+ UInt64(i))
            let (a, b) = i < 4 ? ([0, .max, 0x0123456789ABCDEF, 1][i], [UInt64.max, 0, 0xFEDCBA9876543210, 2][i]) : (h, SplitMix.mix(h))
            let u = SplitMix.uuid(a, b)
            #expect(u == Self.referenceUUID(a, b), "\(a) \(b)")
            #expect(UUID(uuidString: u)?.uuidString == u)
        }
    }
}

