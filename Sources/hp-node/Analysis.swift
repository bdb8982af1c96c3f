import ArgumentParser
import Foundation
import GRDB
import HealthProbeArchive
import HealthProbeCanonical
import HealthProbeCLI

/// Parses a UTC date given on the command line.
func parseDate(_ text: String, option: String) throws -> Double { try CLIDate.parse(text, option: option) }

/// The latest observation of the node's chain, or a clear error.
func latestObservation(_ node: NodeArchive) async throws -> Int64 {
    guard let id = try await node.archive.latestObservationID(chain: node.deviceChainID) else {
        throw ArchiveError(.notFound, "the archive has no observations yet; run `hp-node capture --simulate` or `hp-node import`")
    }
    return id
}

func formatValue(_ v: Double?) -> String {
    guard let v else { return "-" }
    return v == v.rounded() && abs(v) < 1e15 ? String(Int64(v)) : String(format: "%.3f", v)
}

struct Snapshot: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "What was visible at an observation (point in time), paged.")

    @OptionGroup var options: HomeOptions
    @Option(name: .long, help: "Observation id (default: the latest).") var at: Int64?
    @Option(name: .long, help: "Only this sample type.") var type: String?
    @Option(name: .long, help: "Start dates from (UTC, inclusive).") var from: String?
    @Option(name: .long, help: "Start dates to (UTC, exclusive).") var to: String?
    @Option(name: .long, help: "Rows per page.") var limit: Int = 100
    @Option(name: .long, help: "Continue after this cursor (printed at the end of a page).") var after: String?
    @Flag(name: .long, help: "Stream every row instead of one page (JSON Lines with --json).") var all = false
    @Flag(name: .long, help: "Only count the rows.") var count = false

    func validate() throws {
        guard (1...100_000).contains(limit) else { throw ValidationError("--limit must be 1...100000") }
        if let after, PointInTime.Cursor(token: after) == nil { throw ValidationError("--after \(after): not a cursor (expected TYPE_ID:FINGERPRINT)") }
        if let from { _ = try parseDate(from, option: "--from") }
        if let to { _ = try parseDate(to, option: "--to") }
    }

    /// An empty table of visible samples.
    static func table() -> TextTable { TextTable(["type", "start (UTC)", "end (UTC)", "value", "unit", "since obs"], rightAligned: [3, 5]) }

    static func cells(_ r: VisibleSample) -> [String] {
        [TypeCatalogue.name(r.typeIdentifier), Output.date(r.startDate), Output.date(r.endDate),
         r.numericValue.map { formatValue($0) } ?? r.categoryValue.map(String.init) ?? "-", r.unit ?? "-", String(r.visibleSince)]
    }

    func run() async throws {
        let node = try options.open(.readOnly)
        let fromDate = try from.map { try parseDate($0, option: "--from") }
        let toDate = try to.map { try parseDate($0, option: "--to") }
        let observation: Int64
        if let at { observation = at } else { observation = try await latestObservation(node) }
        let scope = SnapshotScope(observationID: observation, typeIdentifier: type, from: fromDate, to: toDate)
        do {
            if count {
                let n = try await node.archive.visibleCount(scope)
                if options.json { try Output.json(["observation_id": Int(scope.observationID), "count": n]) } else { print(n) }
                return
            }
            if all {
                var t = Self.table()
                var n = 0
                try node.archive.streamVisible(scope) { r in
                    n += 1
                    if options.json { try Output.jsonLine(r) } else {
                        t.add(Self.cells(r))
                        if n % 10_000 == 0 { print(t.render()); t = Self.table() }
                    }
                }
                if !options.json { print(t.render()) }
                return
            }
            let page = try await node.archive.visiblePage(scope, after: after.flatMap(PointInTime.Cursor.init(token:)), limit: limit)
            if options.json {
                struct PageOut: Encodable { var observationId: Int64; var rows: [VisibleSample]; var next: String? }
                try Output.json(PageOut(observationId: scope.observationID, rows: page.rows, next: page.next?.token))
                return
            }
            print("observation \(scope.observationID)")
            var t = Self.table()
            for r in page.rows {
                t.add(Self.cells(r))
            }
            print(t.render())
            if let next = page.next { print("(more: --after \(next.token))") }
        }
    }
}

struct Diff: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "What differs between two observations (adjacent or not).")

    @OptionGroup var options: HomeOptions
    @Argument(help: "The earlier observation.") var a: Int64
    @Argument(help: "The later observation.") var b: Int64
    @Flag(name: .long, help: "List the changed samples with before and after versions (paged).") var details = false
    @Option(name: .long, help: "Only this kind: appeared, disappeared or changed.") var kind: String?
    @Option(name: .long, help: "Only this sample type.") var type: String?
    @Option(name: .long, help: "Rows per page.") var limit: Int = 100
    @Option(name: .long, help: "Continue after this sample id.") var after: Int64 = 0

    func validate() throws {
        if let kind, DiffKind(rawValue: kind) == nil { throw ValidationError("--kind \(kind): expected appeared, disappeared or changed") }
        guard (1...100_000).contains(limit) else { throw ValidationError("--limit must be 1...100000") }
    }

    func run() async throws {
        let node = try options.open(.readOnly)
        do {
            let (counts, entries) = try await node.archive.diff(from: a, to: b, details: details, kind: kind.flatMap(DiffKind.init(rawValue:)),
                                                                typeIdentifier: type, afterSampleID: after, limit: limit)
            if options.json {
                struct Out: Encodable { var from: Int64; var to: Int64; var counts: [DiffTypeCount]; var entries: [DiffEntry]?; var nextAfter: Int64? }
                try Output.json(Out(from: a, to: b, counts: counts, entries: details ? entries : nil,
                                    nextAfter: entries.count == limit ? entries.last?.sampleID : nil))
                return
            }
            print("observation \(a) -> \(b)")
            var t = TextTable(["type", "appeared", "disappeared", "changed"], rightAligned: [1, 2, 3])
            for c in counts { t.add([TypeCatalogue.name(c.typeIdentifier), String(c.appeared), String(c.disappeared), String(c.changed)]) }
            if counts.isEmpty { print("no differences") } else { print(t.render()) }
            guard details else { return }
            func v(_ x: VersionView?) -> String {
                guard let x else { return "-" }
                return "\(Output.date(x.startDate)) \(x.numericValue.map { formatValue($0) } ?? x.categoryValue.map(String.init) ?? "-") \(x.unit ?? "")"
            }
            var d = TextTable(["sample", "type", "kind", "before", "after"], rightAligned: [0])
            for e in entries { d.add([String(e.sampleID), TypeCatalogue.name(e.typeIdentifier), e.kind.rawValue, v(e.before), v(e.after)]) }
            print("")
            print(d.render())
            if entries.count == limit, let last = entries.last { print("(more: --after \(last.sampleID))") }
        }
    }
}

struct Changes: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Classify each type's change between two observations, with evidence.")

    @OptionGroup var options: HomeOptions
    @Argument(help: "The earlier observation (default: the one before the latest).") var a: Int64?
    @Argument(help: "The later observation (default: the latest).") var b: Int64?

    func validate() throws {
        if (a == nil) != (b == nil) { throw ValidationError("give both observations, or neither for the last two") }
    }

    func run() async throws {
        let node = try options.open(.readOnly)
        let report = try await node.archive.changeReport(chain: node.deviceChainID, from: a, to: b)
        if options.json { try Output.json(report); return }
        print("observation \(report.from) -> \(report.to)\(report.manyTypesShifting ? "  (many types shifted at once)" : "")")
        var t = TextTable(["type", "verdict", "labels", "before", "after", "appeared", "disappeared", "changed", "lost", "consolidated", "uncertain"],
                          rightAligned: [3, 4, 5, 6, 7, 8, 9, 10])
        for c in report.types {
            t.add([TypeCatalogue.name(c.typeIdentifier), c.verdict.rawValue, c.labels.map(\.rawValue).joined(separator: ","), c.visibleBefore.map(String.init) ?? "-",
                   c.visibleAfter.map(String.init) ?? "-", String(c.appeared.count), String(c.disappeared.count), String(c.changed),
                   String(c.lostRecords), String(c.consolidatedRecords), String(c.uncertainRecords)])
        }
        print(t.render())
        for c in report.types where !c.reasons.isEmpty { print("\(TypeCatalogue.name(c.typeIdentifier)): \(c.verdict.rawValue): \(c.reasons.joined(separator: "; "))") }
        for c in report.types where !c.uncertainty.isEmpty { print("\(TypeCatalogue.name(c.typeIdentifier)): \(c.uncertainty.joined(separator: "; "))") }
    }
}

struct Summary: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Visible counts per type, or a type's daily aggregates (local days).")

    @OptionGroup var options: HomeOptions
    @Option(name: .long, help: "Observation id (default: the latest).") var at: Int64?
    @Option(name: .long, help: "Show this type's daily aggregates.") var type: String?
    @Option(name: .long, help: "How many most recent days of daily aggregates.") var days: Int = 14

    func validate() throws { guard (1...36_500).contains(days) else { throw ValidationError("--days must be 1...36500") } }

    func run() async throws {
        let node = try options.open(.readOnly)
        do {
            let obs: Int64
            if let at { obs = at } else { obs = try await latestObservation(node) }
            let summaries = try await node.archive.summaries(at: obs, typeIdentifier: type)
            guard let type else {
                if options.json { try Output.json(summaries); return }
                print("observation \(obs)")
                var t = TextTable(["type", "visible", "earliest (UTC)", "latest (UTC)", "sum", "max", "as of obs"], rightAligned: [1, 4, 5, 6])
                for s in summaries {
                    t.add([TypeCatalogue.name(s.typeIdentifier), String(s.visibleRecordCount), Output.date(s.earliestStartDate), Output.date(s.latestEndDate),
                           formatValue(s.valueSum), formatValue(s.valueMax), String(s.observationID)])
                }
                print(t.render())
                return
            }
            guard let s = summaries.first else { throw ArchiveError(.notFound, "no aggregates for \(type) at observation \(obs)") }
            let rows = try await node.archive.recentDays(at: obs, typeIdentifier: type, latestEnd: s.latestEndDate, days: days)
            if options.json { try Output.json(rows); return }
            print("\(type) at observation \(obs) (daily rows as of observation \(s.dailyBaseObservationID.map(String.init) ?? "-"))")
            var t = TextTable(["day start (UTC)", "hours", "records", "sum", "max", "source revision"], rightAligned: [1, 2, 3, 4])
            for r in rows {
                t.add([Output.date(r.bucketStart), formatValue((r.bucketEnd - r.bucketStart) / 3600), String(r.visibleRecordCount),
                       formatValue(r.valueSum), formatValue(r.valueMax), r.sourceRevision ?? "-"])
            }
            print(t.render())
        }
    }
}

struct Cache: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "The disposable report cache.", subcommands: [Rebuild.self, CacheStatus.self])

    struct Rebuild: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Delete every cached row and rebuild from the archive (settings are kept).")
        @OptionGroup var options: HomeOptions
        @Flag(name: .long, help: "Also recompute the archive's materialized aggregates first.") var aggregates = false

        func run() async throws {
            let node = try options.open(aggregates ? .readWrite : .readOnly)
            if aggregates {
                let now = node.clock.now()
                try await node.archive.rebuildAggregates(now: now)
            }
            let cache = try ArchiveCache.of(options.resolvedHome)
            try cache.rebuild(from: node)
            let counts = try cache.counts()
            if options.json { try Output.json(counts); return }
            print("cache rebuilt: \(cache.path)")
            for (k, v) in counts.sorted(by: { $0.key < $1.key }) { print("  \(k.padding(toLength: 26, withPad: " ", startingAt: 0)) \(v)") }
        }
    }

    struct CacheStatus: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "status", abstract: "Bring the cache up to date and show what it holds.")
        @OptionGroup var options: HomeOptions

        func run() async throws {
            let node = try options.open(.readOnly)
            let cache = try ArchiveCache.of(options.resolvedHome)
            let refresh = try cache.refresh(from: node)
            let counts = try cache.counts()
            let what: String
            switch refresh {
            case .upToDate: what = "up to date"
            case .targeted(let n): what = "refreshed \(n) observation(s)"
            case .full(let reason): what = "rebuilt (\(reason))"
            }
            if options.json { try Output.json(["refresh": .string(what), "rows": JSONValue.object(counts.mapValues { .int($0) })] as [String: JSONValue]); return }
            print("cache \(cache.path): \(what)")
            for (k, v) in counts.sorted(by: { $0.key < $1.key }) { print("  \(k.padding(toLength: 26, withPad: " ", startingAt: 0)) \(v)") }
        }
    }
}
