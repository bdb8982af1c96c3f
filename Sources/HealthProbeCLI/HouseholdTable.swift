import HealthProbeProtocol
import HealthProbeArchive

/// The tables `hp-server summary` and `hp-node household` print: one column per chain.
/// Any report `HouseholdSummary.Report(wire:)` admits renders without a trap (dates
/// out of range, counts up to 2^53-1 summed, text from the server made printable).
public enum HouseholdTable {
    /// Prints the report.
    public static func print(_ report: HouseholdSummary.Report, type: String?) {
        Swift.print(render(report, type: type))
    }

    /// The text `print` writes, without its last newline.
    public static func render(_ report: HouseholdSummary.Report, type: String?) -> String {
        let chains = report.chains
        var header = ["type"] + chains.map { shown($0.chain, 12) }
        header.append("sum of chains")
        var t = TextTable(header, rightAligned: Set(1..<header.count))
        t.add(["device"] + chains.map { $0.deviceName.map { shown($0, 128) } ?? "-" } + [""])
        t.add(["last observation"] + chains.map { $0.lastObservationID.map(String.init) ?? "-" } + [""])
        t.add(["last sync (UTC)"] + chains.map { Output.date($0.lastSyncAt) } + [""])
        t.add(["clock offset at sync (s)"] + chains.map { $0.clockOffsetSeconds.map(offset) ?? "-" } + [""])
        let types = report.householdSumOfChains.keys.sorted()
        for type in types {
            let cells: [String] = chains.map { c in c.visible[type].map { String($0) } ?? "-" }
            let total = String(report.householdSumOfChains[type] ?? 0)
            t.add([shown(TypeCatalogue.name(type), 256)] + cells + [total])
        }
        var lines = [t.render()]
        if let type {
            let days = Set(chains.flatMap { $0.daily.map(\.bucketStart) }).sorted()
            var d = TextTable(["\(shown(TypeCatalogue.name(type), 256)) day (UTC start)"] + chains.map { shown($0.chain, 12) }, rightAligned: Set(1...max(chains.count, 1)))
            for day in days {
                d.add([Output.date(day)] + chains.map { c in
                    let rows = c.daily.filter { $0.bucketStart == day }
                    return rows.isEmpty ? "-" : sum(rows.map(\.visibleRecordCount))
                })
            }
            lines += ["", d.render()]
        }
        for s in report.possiblySharedSources where s.identicalStrictFingerprints > 0 {
            let a = s.chains.first.map { shown($0, 12) } ?? "-", b = s.chains.dropFirst().first.map { shown($0, 12) } ?? "-"
            lines.append("possibly shared source: \(shown(TypeCatalogue.name(s.typeIdentifier), 256)): \(s.identicalStrictFingerprints) visible records of \(a) have identical strict fingerprints in \(b) (not merged)")
        }
        lines.append("columns are device chains, never merged; \"sum of chains\" adds them as they are (a record present in two chains counts twice)")
        if type == nil, let first = types.first {
            lines.append("one type's days: --type IDENTIFIER (the identifiers are in --json, e.g. \(shown(first, 256)))")
        }
        return lines.joined(separator: "\n")
    }

    /// Server text as a cell: its first `count` characters, nothing a terminal would act on.
    static func shown(_ text: String, _ count: Int) -> String {
        ShownText.clean(String(text.unicodeScalars.prefix(count)), maxCharacters: count)
    }

    static func offset(_ seconds: Double) -> String {
        guard seconds.isFinite else { return "?" }
        return abs(seconds) < 0.05 ? "0.0" : String(format: "%+.1f", seconds)
    }

    /// Counts of one day added without overflow (each is at most 2^53-1; their sum may not fit).
    static func sum(_ counts: [Int]) -> String {
        var total = 0
        for n in counts {
            let (s, overflow) = total.addingReportingOverflow(n)
            guard !overflow else { return "more than \(Int.max)" }
            total = s
        }
        return String(total)
    }
}
