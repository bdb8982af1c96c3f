import HealthProbeProtocol

/// The tables `hp-server summary` and `hp-node household` print: one column per chain.
public enum HouseholdTable {
    /// Prints the report.
    public static func print(_ report: HouseholdSummary.Report, type: String?) {
        let chains = report.chains
        var header = ["type"] + chains.map { String($0.chain.prefix(12)) }
        header.append("sum of chains")
        var t = TextTable(header, rightAligned: Set(1..<header.count))
        t.add(["device"] + chains.map { $0.deviceName ?? "-" } + [""])
        t.add(["last observation"] + chains.map { $0.lastObservationID.map(String.init) ?? "-" } + [""])
        t.add(["last sync (UTC)"] + chains.map { Output.date($0.lastSyncAt) } + [""])
        t.add(["clock offset at sync (s)"] + chains.map { $0.clockOffsetSeconds.map { abs($0) < 0.05 ? "0.0" : String(format: "%+.1f", $0) } ?? "-" } + [""])
        for type in report.householdSumOfChains.keys.sorted() {
            let cells: [String] = chains.map { c in c.visible[type].map { String($0) } ?? "-" }
            let total = String(report.householdSumOfChains[type] ?? 0)
            t.add([type] + cells + [total])
        }
        Swift.print(t.render())
        if let type {
            let days = Set(chains.flatMap { $0.daily.map(\.bucketStart) }).sorted()
            var d = TextTable(["\(type) day (UTC start)"] + chains.map { String($0.chain.prefix(12)) }, rightAligned: Set(1...max(chains.count, 1)))
            for day in days {
                d.add([Output.date(day)] + chains.map { c in
                    let rows = c.daily.filter { $0.bucketStart == day }
                    return rows.isEmpty ? "-" : String(rows.reduce(0) { $0 + $1.visibleRecordCount })
                })
            }
            Swift.print("")
            Swift.print(d.render())
        }
        for s in report.possiblySharedSources where s.identicalStrictFingerprints > 0 {
            Swift.print("possibly shared source: \(s.typeIdentifier): \(s.identicalStrictFingerprints) visible records of \(s.chains[0].prefix(12)) have identical strict fingerprints in \(s.chains[1].prefix(12)) (not merged)")
        }
        Swift.print("columns are device chains, never merged; \"sum of chains\" adds them as they are (a record present in two chains counts twice)")
    }
}
