import ArgumentParser
import Foundation
import GRDB
import HealthProbeArchive

/// `hp-bench analyze --samples N`: builds an archive of N visible samples and a
/// second observation differing by 1% (0.5% edited, 0.5% deleted), then times
/// the diff, point-in-time pages (first and deep), the full point-in-time
/// stream, change classification and the aggregate rebuild.
struct AnalyzeBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "analyze", abstract: "Measure diffs, point-in-time views and aggregates.")

    @Option(name: .long, help: "Number of visible samples.")
    var samples: Int = 1_000_000

    @Option(name: .long, help: "Rows per point-in-time page.")
    var pageRows: Int = 100

    @OptionGroup var bench: BenchOptions

    func validate() throws {
        guard samples >= 1000 else { throw ValidationError("--samples must be at least 1000") }
    }

    /// Sample `i` of type `t`: generation 1 edits 0.5% and drops 0.5%.
    static func sample(type t: Int, index i: Int, generation: Int) -> CapturedSample? {
        guard var s = CaptureBench.sample(type: t, index: i, generation: 0) else { return nil }
        let bucket = SplitMixHash.hash(UInt64(t), UInt64(i)) % 200
        if generation == 1 && bucket == 1 { return nil }
        if generation == 1 && bucket == 0 { s.numericValue = (s.numericValue ?? 0) + 1 }
        return s
    }

    func run() async throws { try measure() }

    /// Synchronous body: GRDB's blocking accessors throughout.
    func measure() throws {
        let root = bench.workDirectory("analyze")
        let home = ArchiveHome(root: root)
        defer { bench.cleanUp(root) }
        let clock = ManualClock(1_750_000_000)
        let node = try home.open(clock: clock)
        let types = CaptureBench.types
        let perType = samples / types.count
        var results: [PhaseResult] = []
        try Self.prepare(node: node, clock: clock, samples: samples, pageSize: bench.pageSize, quiet: bench.json)
        let (a, b) = try node.archive.unsafeBenchmarkAccess.read { db in
            let ids = try Int64.fetchAll(db, sql: "SELECT id FROM observations ORDER BY id")
            return (ids[0], ids[1])
        }
        let bytes = Measure.databaseBytes(home.archivePath)
        func add(_ phase: String, rows: Int, seconds: Double, notes: String) {
            results.append(PhaseResult(phase: phase, samples: rows, seconds: seconds, samplesPerSecond: Double(rows) / max(seconds, 1e-9),
                                       archiveBytes: bytes, peakRssBytes: Measure.peakRSS(), notes: notes))
            if !bench.json { FileHandle.standardError.write(Data("\(phase): \(String(format: "%.4f", seconds)) s\n".utf8)) }
        }
        Measure.resetPeakRSS()

        // Diff of the two observations (1% apart): temp tables, counts, first page.
        let (diffCounts, diffSeconds) = try Measure.time { () throws -> [DiffTypeCount] in
            try node.archive.unsafeBenchmarkAccess.read { db in
                let d = try ObservationDiff.prepare(db, from: a, to: b)
                let c = try d.counts(db)
                _ = try d.page(db, limit: pageRows)
                return c
            }
        }
        let changes = diffCounts.reduce(0) { $0 + $1.appeared + $1.disappeared + $1.changed }
        add("diff_1pct", rows: changes, seconds: diffSeconds, notes: "\(changes) changed samples between observations \(a) and \(b)")

        let (report, classifySeconds) = try Measure.time { () throws -> ChangeReport in
            try node.archive.unsafeBenchmarkAccess.read { db in try ChangeClassifier.classify(db, diff: ObservationDiff.prepare(db, from: a, to: b)) }
        }
        add("classify_1pct", rows: changes, seconds: classifySeconds, notes: "labels: " + Set(report.types.flatMap(\.labels).map(\.rawValue)).sorted().joined(separator: ","))

        // Point-in-time pages: the first, and one 90% deep (cursor fetched outside the timing).
        let scope = SnapshotScope(observationID: b, typeIdentifier: types[types.count - 1].identifier)
        let deepCursor = try node.archive.unsafeBenchmarkAccess.read { db -> PointInTime.Cursor in
            let typeID = try Int64.fetchOne(db, sql: "SELECT id FROM sample_types WHERE type_identifier = ?", arguments: [scope.typeIdentifier!])!
            let fp = try String.fetchOne(db, sql: "SELECT lower(hex(strict_fingerprint)) FROM samples WHERE sample_type_id = ? ORDER BY \(SampleIndexes.fingerprintPrefix("strict_fingerprint")) LIMIT 1 OFFSET ?",
                                         arguments: [typeID, perType * 9 / 10])!
            return PointInTime.Cursor(typeID: typeID, fingerprint: fp)
        }
        let allTypes = SnapshotScope(observationID: b)
        for (name, s, cursor) in [("page_deep_90pct", scope, deepCursor), ("page_first", scope, nil),
                                  ("page_first_all_types", allTypes, nil), ("page_deep_all_types", allTypes, deepCursor)] as [(String, SnapshotScope, PointInTime.Cursor?)] {
            var best = Double.infinity
            var rows = 0
            for _ in 0..<5 {
                let (n, t) = try Measure.time { () throws -> Int in try node.archive.unsafeBenchmarkAccess.read { db in try PointInTime.page(db, s, after: cursor, limit: pageRows).rows.count } }
                best = min(best, t)
                rows = n
            }
            add(name, rows: rows, seconds: best, notes: "best of 5, \(pageRows) rows per page")
        }

        // The full point-in-time stream at the later observation.
        let (streamed, streamSeconds) = try Measure.time { () throws -> Int in
            try node.archive.unsafeBenchmarkAccess.read { db in
                var n = 0
                var checksum = 0.0
                try PointInTime.stream(db, allTypes) { r in n += 1; checksum += r.numericValue ?? 0 }
                return checksum.isNaN ? -1 : n
            }
        }
        add("stream_all", rows: streamed, seconds: streamSeconds, notes: "every visible sample at observation \(b)")

        // Aggregate rebuild (both observations, every type).
        let (_, rebuildSeconds) = try Measure.time { () throws -> Void in
            try node.archive.unsafeBenchmarkAccess.write { db in try Aggregates.rebuildAll(db, now: clock.now()) }
        }
        let aggRows = try node.archive.unsafeBenchmarkAccess.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM daily_type_aggregates") ?? 0 }
        add("aggregate_rebuild", rows: perType * types.count * 2, seconds: rebuildSeconds, notes: "\(aggRows) daily rows; samples counted once per observation")
        try Report.print(results, json: bench.json)
    }

    /// Builds (or reuses, when `--dir` already holds it) the two-observation archive.
    static func prepare(node: NodeArchive, clock: ManualClock, samples: Int, pageSize: Int, quiet: Bool) throws {
        let types = CaptureBench.types
        let perType = samples / types.count
        let marker = "bench.analyze.samples"
        let existing = try node.archive.unsafeBenchmarkAccess.read { db in try String.fetchOne(db, sql: "SELECT value FROM archive_metadata WHERE key = ?", arguments: [marker]) }
        if existing != String(perType * types.count) {
            for gen in 0..<2 {
                clock.advance(3600)
                let (_, seconds) = try Measure.time { () throws -> Void in
                    let session = try CaptureSession.begin(node, context: ObservationContext(triggerReason: .benchmark, timeZoneIdentifier: "Europe/Berlin",
                                                                                              selectedTypes: types.map(\.identifier)))
                    for (ti, type) in types.enumerated() {
                        let run = try session.beginTypeRun(type, kind: .fullScan)
                        let pipeline = PipelinedPageWriter(run: run)
                        var page: [CapturedSample] = []
                        for i in 0..<perType {
                            if let s = Self.sample(type: ti, index: i, generation: gen) { page.append(s) }
                            if page.count == pageSize { try pipeline.submit(page, to: run); page = [] }
                        }
                        if !page.isEmpty { try pipeline.submit(page, to: run) }
                        _ = try pipeline.flush()
                        try run.complete()
                    }
                    _ = try session.finish()
                }
                if !quiet { FileHandle.standardError.write(Data("setup capture \(gen + 1): \(String(format: "%.1f", seconds)) s\n".utf8)) }
            }
            try node.archive.unsafeBenchmarkAccess.write { db in
                try db.execute(sql: "INSERT OR REPLACE INTO archive_metadata(key, value) VALUES (?, ?)", arguments: [marker, String(perType * types.count)])
            }
        }
    }

}

/// The bench's own deterministic hash (independent of the capture bench's choices).
enum SplitMixHash {
    static func hash(_ a: UInt64, _ b: UInt64) -> UInt64 {
        var z = a &* 0x9E37_79B9_7F4A_7C15 &+ b &+ 0x632B_E59B_D9B5_E1D
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
