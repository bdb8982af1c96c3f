import Foundation
import GRDB

/// What a type's change between two observations most likely was.
public enum ChangeLabel: String, Sendable, Codable {
    /// Either side's type run was unauthorized, failed or partial: no conclusion (never loss).
    case unavailable
    case noChange = "no_change"
    /// Samples appeared after the previous latest date (normal growth).
    case newData = "new_data"
    /// Samples appeared dated before the previous earliest date.
    case historicalInsertion = "historical_insertion"
    /// Samples disappeared with nothing covering their days.
    case loss
    /// Many short samples replaced by fewer, longer ones with matching values.
    case consolidationLikely = "consolidation_likely"
    /// Replacement without enough evidence either way.
    case consolidationPossible = "consolidation_possible"
    /// Payload versions changed (edits, unit or metadata changes).
    case representationChange = "representation_change"
    /// Most appeared samples duplicate visible ones (same start, end and value).
    case duplication
    /// Four or more types shifted by over 10% at once (sync or restore event).
    case manyTypesShifting = "many_types_shifting"
}

/// The one conclusion about a type's change between two observations, with the labels
/// and counts as its evidence. Worst first: a type with any loss is `loss`, whatever
/// else happened beside it.
public enum ChangeVerdict: String, Sendable, Codable {
    /// A side's type run was unauthorized, failed or partial: nothing is concluded.
    case unavailable
    /// Records disappeared with nothing of their own source covering their days.
    case loss
    /// Records were replaced on their days without enough evidence to call it consolidation.
    case uncertain
    /// Records were replaced by fewer, longer ones of the same source with matching values.
    case consolidation
    /// Records that had disappeared earlier are visible again.
    case restored
    /// Most appeared records duplicate visible ones.
    case duplication
    /// Records were edited (new payload versions), nothing disappeared.
    case edits
    /// Records appeared (new, or dated before the earliest), nothing disappeared.
    case growth
    case noChange = "no_change"
}

/// Evidence about one set of samples (the appeared or the disappeared ones).
public struct SetEvidence: Sendable, Codable, Equatable {
    public var count = 0
    public var valueSum: Double?
    public var earliestStart: Double?
    public var latestEnd: Double?
    public var meanDurationSeconds: Double?
    /// Records per hour over the set's window (density).
    public var recordsPerHour: Double?
    /// Counts per source revision (`bundle id product version`).
    public var bySourceRevision: [String: Int] = [:]
}

/// One type's classification with its evidence.
public struct TypeClassification: Sendable, Codable, Equatable {
    public var typeIdentifier: String
    public var labels: [ChangeLabel]
    public var uncertainty: [String]
    public var runStatusBefore: String?
    public var runStatusAfter: String?
    public var visibleBefore: Int?
    public var visibleAfter: Int?
    public var recordCountDelta: Int?
    public var appeared: SetEvidence
    public var disappeared: SetEvidence
    public var changed: Int
    public var valueSumDelta: Double?
    /// Fraction of the disappeared samples' days that also had appearances.
    public var coverageOverlap: Double?
    public var lostRecords: Int
    public var consolidatedRecords: Int
    public var uncertainRecords: Int
    public var historicalRecords: Int
    public var duplicateRecords: Int
    public var earliestBefore: Double?
    public var latestBefore: Double?
    /// Of `lostRecords`: those that vanished on days when only another source wrote records
    /// (never consolidation: consolidation keeps a record's source).
    public var lostBesideOtherSource: Int = 0
    /// Appeared records whose sample had been visible before and had disappeared.
    public var restoredRecords: Int = 0
    /// The one conclusion, and why, in words.
    public var verdict: ChangeVerdict = .noChange
    public var reasons: [String] = []
}

/// Classifications of every type between two observations.
public struct ChangeReport: Sendable, Codable, Equatable {
    public var from: Int64
    public var to: Int64
    public var types: [TypeClassification]
    public var manyTypesShifting: Bool
}

/// Classifies changes per type from a prepared diff (database-design.md 10;
/// count drops alone are never called loss).
///
/// Evidence is gathered per UTC day: a day whose samples disappeared with no
/// appearance that day is loss; a day where fewer, longer samples appeared
/// with a matching value sum (amounts) or mean (rates) is consolidation.
public enum ChangeClassifier {
    /// Tolerances for consolidation: amounts' sums within 5%, rates' means within 10%.
    public static let sumTolerance = 0.05
    public static let meanTolerance = 0.10

    public static func classify(_ db: Database, diff: ObservationDiff) throws -> ChangeReport {
        let fromIsLo = diff.from <= diff.to
        let beforeCol = fromIsLo ? "lo_version" : "hi_version"
        let afterCol = fromIsLo ? "hi_version" : "lo_version"
        let typeRows = try Row.fetchAll(db, sql: """
            SELECT st.id, st.type_identifier FROM sample_types st
            WHERE st.id IN (SELECT type_id FROM temp.hp_diff)
               OR st.id IN (SELECT sample_type_id FROM observation_type_runs WHERE observation_id IN (?, ?))
            ORDER BY st.type_identifier
            """, arguments: [diff.from, diff.to])
        var out: [TypeClassification] = []
        for tr in typeRows {
            let typeID: Int64 = tr[0]
            let identifier: String = tr[1]
            var c = TypeClassification(typeIdentifier: identifier, labels: [], uncertainty: [], appeared: SetEvidence(), disappeared: SetEvidence(),
                                       changed: 0, lostRecords: 0, consolidatedRecords: 0, uncertainRecords: 0, historicalRecords: 0, duplicateRecords: 0)
            c.runStatusBefore = try runStatus(db, observation: diff.from, typeID: typeID)
            c.runStatusAfter = try runStatus(db, observation: diff.to, typeID: typeID)
            let before = try AggregateQueries.summaries(db, at: diff.from, typeIdentifier: identifier).first
            let after = try AggregateQueries.summaries(db, at: diff.to, typeIdentifier: identifier).first
            c.visibleBefore = before?.visibleRecordCount
            c.visibleAfter = after?.visibleRecordCount
            c.earliestBefore = before?.earliestStartDate
            c.latestBefore = before?.latestEndDate
            if let a = c.visibleAfter, let b = c.visibleBefore { c.recordCountDelta = a - b }
            c.appeared = try evidence(db, typeID: typeID, kind: "appeared", column: afterCol)
            c.disappeared = try evidence(db, typeID: typeID, kind: "disappeared", column: beforeCol)
            c.changed = try Int.fetchOne(db, sql: "SELECT count(*) FROM temp.hp_diff WHERE type_id = ? AND kind = 'changed'", arguments: [typeID]) ?? 0
            if let a = c.appeared.valueSum, let d = c.disappeared.valueSum { c.valueSumDelta = a - d }

            let unavailable = [c.runStatusBefore, c.runStatusAfter].compactMap { $0 }.filter { $0 != TypeRunStatus.completed.rawValue }
            if !unavailable.isEmpty {
                c.labels = [.unavailable]
                c.uncertainty.append("type run \(unavailable.joined(separator: " / ")): the visible set is incomplete, so no loss or consolidation is concluded")
                out.append(c)
                continue
            }
            if c.appeared.count == 0 && c.disappeared.count == 0 && c.changed == 0 { c.labels = [.noChange]; out.append(c); continue }
            try classifyDays(db, typeID: typeID, beforeCol: beforeCol, afterCol: afterCol, into: &c)
            if c.appeared.count > 0 {
                if let earliest = c.earliestBefore {
                    c.historicalRecords = try Int.fetchOne(db, sql: """
                        SELECT count(*) FROM temp.hp_diff d JOIN sample_versions v ON v.id = d.\(afterCol)
                        WHERE d.type_id = ? AND d.kind = 'appeared' AND v.start_date < ?
                        """, arguments: [typeID, earliest]) ?? 0
                }
                c.duplicateRecords = try duplicates(db, typeID: typeID, afterCol: afterCol, at: diff.to)
            }
            if c.appeared.count > 0 { c.restoredRecords = try restored(db, typeID: typeID, afterCol: afterCol, at: diff.to) }
            if c.lostRecords > 0 { c.labels.append(.loss) }
            if c.consolidatedRecords > 0 { c.labels.append(.consolidationLikely) }
            if c.uncertainRecords > 0 { c.labels.append(.consolidationPossible) }
            if c.historicalRecords > 0 { c.labels.append(.historicalInsertion) }
            if c.duplicateRecords * 2 > c.appeared.count && c.appeared.count > 0 { c.labels.append(.duplication) }
            if c.changed > 0 { c.labels.append(.representationChange) }
            let newer = c.appeared.count - c.historicalRecords
            if newer > 0 && (c.latestBefore == nil || (c.appeared.latestEnd ?? 0) > (c.latestBefore ?? 0)) { c.labels.append(.newData) }
            if before == nil || after == nil { c.uncertainty.append("aggregates missing for one side; visible counts unknown (run `hp-node cache rebuild`)") }
            out.append(c)
        }
        // Many types shifting at once.
        let shifting = out.filter { c in
            guard let b = c.visibleBefore, let a = c.visibleAfter, !c.labels.contains(.unavailable) else { return false }
            return Double(abs(a - b)) > 0.10 * Double(max(b, 1))
        }.map(\.typeIdentifier)
        let many = shifting.count >= 4
        if many {
            for i in out.indices where shifting.contains(out[i].typeIdentifier) { out[i].labels.append(.manyTypesShifting) }
        }
        for i in out.indices { decide(&out[i]) }
        return ChangeReport(from: diff.from, to: diff.to, types: out, manyTypesShifting: many)
    }

    static func runStatus(_ db: Database, observation: Int64, typeID: Int64) throws -> String? {
        try String.fetchOne(db, sql: "SELECT status FROM observation_type_runs WHERE observation_id = ? AND sample_type_id = ? ORDER BY id DESC LIMIT 1",
                            arguments: [observation, typeID])
    }

    static func evidence(_ db: Database, typeID: Int64, kind: String, column: String) throws -> SetEvidence {
        var e = SetEvidence()
        let r = try Row.fetchOne(db, sql: """
            SELECT count(*) AS n, sum(v.numeric_value) AS total, min(v.start_date) AS first, max(v.end_date) AS last,
                   avg(v.end_date - v.start_date) AS dur
            FROM temp.hp_diff d JOIN sample_versions v ON v.id = d.\(column)
            WHERE d.type_id = ? AND d.kind = ?
            """, arguments: [typeID, kind])!
        e.count = r["n"]
        e.valueSum = r["total"]
        e.earliestStart = r["first"]
        e.latestEnd = r["last"]
        e.meanDurationSeconds = r["dur"]
        if let a = e.earliestStart, let b = e.latestEnd, e.count > 0 { e.recordsPerHour = Double(e.count) / max((b - a) / 3600, 1.0 / 60) }
        for row in try Row.fetchAll(db, sql: """
            SELECT ifnull(so.bundle_identifier, '?') || ' ' || ifnull(sr.product_type, '?') || ' ' || ifnull(sr.version, '?') AS label, count(*) AS n
            FROM temp.hp_diff d JOIN sample_versions v ON v.id = d.\(column)
            LEFT JOIN source_revisions sr ON sr.id = v.source_revision_id LEFT JOIN sources so ON so.id = sr.source_id
            WHERE d.type_id = ? AND d.kind = ? GROUP BY label ORDER BY label LIMIT 50
            """, arguments: [typeID, kind]) {
            e.bySourceRevision[row["label"]] = row["n"]
        }
        return e
    }

    /// Per UTC day and source: loss, consolidation or uncertain replacement. Only records
    /// of the same source (one source across its revisions) can replace each other: records
    /// that vanish while only another source wrote that day are loss.
    static func classifyDays(_ db: Database, typeID: Int64, beforeCol: String, afterCol: String, into c: inout TypeClassification) throws {
        let days = try Row.fetchAll(db, sql: """
            WITH x AS (
                SELECT CAST(v.start_date / 86400 AS INTEGER) AS day, ifnull(sr.source_id, -1) AS source, d.kind, v.numeric_value AS value,
                       v.end_date - v.start_date AS dur, v.unit
                FROM temp.hp_diff d JOIN sample_versions v ON v.id = CASE d.kind WHEN 'appeared' THEN d.\(afterCol) ELSE d.\(beforeCol) END
                LEFT JOIN source_revisions sr ON sr.id = v.source_revision_id
                WHERE d.type_id = ? AND d.kind IN ('appeared', 'disappeared')
            )
            SELECT day, source,
                   sum(sum(kind = 'appeared')) OVER (PARTITION BY day) AS day_an,
                   sum(kind = 'disappeared') AS dn, sum(CASE WHEN kind = 'disappeared' THEN value END) AS dsum,
                   avg(CASE WHEN kind = 'disappeared' THEN value END) AS dmean, avg(CASE WHEN kind = 'disappeared' THEN dur END) AS ddur,
                   sum(kind = 'appeared') AS an, sum(CASE WHEN kind = 'appeared' THEN value END) AS asum,
                   avg(CASE WHEN kind = 'appeared' THEN value END) AS amean, avg(CASE WHEN kind = 'appeared' THEN dur END) AS adur,
                   max(instr(ifnull(unit, ''), '/') > 0) AS rate
            FROM x GROUP BY day, source
            """, arguments: [typeID]).filter { ($0["dn"] as Int) > 0 }
        var coveredDays = 0
        var noValues = false
        for d in days {
            let dn: Int = d["dn"], an: Int = d["an"]
            if an == 0 {
                c.lostRecords += dn
                if (d["day_an"] as Int) > 0 { c.lostBesideOtherSource += dn }
                continue
            }
            coveredDays += 1
            let fewerLonger = an < dn && ((d["adur"] as Double?) ?? 0) > ((d["ddur"] as Double?) ?? 0)
            var valuesMatch: Bool?
            if (d["rate"] as Bool?) == true {
                if let a: Double = d["amean"], let b: Double = d["dmean"] { valuesMatch = abs(a - b) <= meanTolerance * max(abs(b), 1e-9) }
            } else if let a: Double = d["asum"], let b: Double = d["dsum"] {
                valuesMatch = abs(a - b) <= sumTolerance * max(abs(b), 1e-9)
            }
            if fewerLonger && valuesMatch == true {
                c.consolidatedRecords += dn
            } else {
                c.uncertainRecords += dn
                if valuesMatch == nil { noValues = true }
            }
        }
        if !days.isEmpty { c.coverageOverlap = Double(coveredDays) / Double(days.count) }
        if c.lostBesideOtherSource > 0 {
            c.uncertainty.append("\(c.lostBesideOtherSource) record(s) vanished on days when only another source wrote records: consolidation keeps a record's source, so this is loss")
        }
        if c.uncertainRecords > 0 {
            c.uncertainty.append(noValues
                ? "samples were replaced on the same days but carry no values to compare"
                : "samples were replaced on the same days without the fewer-longer pattern or matching values")
        }
    }

    /// Appeared samples that had a visibility range closed before: history visible again.
    static func restored(_ db: Database, typeID: Int64, afterCol: String, at obs: Int64) throws -> Int {
        try Int.fetchOne(db, sql: """
            SELECT count(*) FROM temp.hp_diff d JOIN sample_versions v ON v.id = d.\(afterCol)
            WHERE d.type_id = ? AND d.kind = 'appeared' AND EXISTS (
                SELECT 1 FROM sample_visibility_ranges r WHERE r.sample_id = v.sample_id AND r.last_observation_id IS NOT NULL AND r.last_observation_id <= ?)
            """, arguments: [typeID, obs]) ?? 0
    }

    /// The one verdict and its reasons, in words, from the counts and labels.
    static func decide(_ c: inout TypeClassification) {
        var reasons: [String] = []
        let verdict: ChangeVerdict
        if c.labels.contains(.unavailable) {
            verdict = .unavailable
            reasons.append("a capture of this type was not complete, so nothing is concluded")
        } else if c.lostRecords > 0 {
            verdict = .loss
            reasons.append("\(c.lostRecords) record(s) disappeared with nothing of their own source on their days")
            if c.lostBesideOtherSource > 0 { reasons.append("\(c.lostBesideOtherSource) of them beside another source's records, which do not replace them") }
        } else if c.uncertainRecords > 0 {
            verdict = .uncertain
            reasons.append("\(c.uncertainRecords) record(s) were replaced on their days without the pattern of consolidation (fewer, longer records with matching values)")
        } else if c.consolidatedRecords > 0 {
            verdict = .consolidation
            reasons.append("\(c.consolidatedRecords) record(s) were replaced by fewer, longer records of the same source with matching values")
        } else if c.restoredRecords > 0 {
            verdict = .restored
            reasons.append("\(c.restoredRecords) record(s) that had disappeared are visible again")
        } else if c.labels.contains(.duplication) {
            verdict = .duplication
            reasons.append("most of the \(c.appeared.count) appeared record(s) repeat records already visible")
        } else if c.changed > 0 && c.appeared.count == 0 && c.disappeared.count == 0 {
            verdict = .edits
            reasons.append("\(c.changed) record(s) were edited")
        } else if c.appeared.count > 0 || c.changed > 0 {
            verdict = .growth
            reasons.append("\(c.appeared.count) record(s) appeared" + (c.historicalRecords > 0 ? ", \(c.historicalRecords) dated before the earliest one" : ""))
            if c.changed > 0 { reasons.append("\(c.changed) record(s) were edited") }
        } else {
            verdict = .noChange
        }
        if c.labels.contains(.manyTypesShifting) {
            reasons.append(verdict == .loss
                ? "several types shifted at once, as a sync or restore does; that does not explain this type's loss"
                : "several types shifted at once, as a sync or restore does")
        }
        c.verdict = verdict
        c.reasons = reasons
    }

    /// Appeared samples with the same start, end and value as another sample visible at `obs`.
    static func duplicates(_ db: Database, typeID: Int64, afterCol: String, at obs: Int64) throws -> Int {
        try Int.fetchOne(db, sql: """
            SELECT count(*) FROM temp.hp_diff d JOIN sample_versions v ON v.id = d.\(afterCol)
            WHERE d.type_id = ?1 AND d.kind = 'appeared' AND EXISTS (
                SELECT 1 FROM sample_versions v2
                JOIN samples s2 ON s2.id = v2.sample_id AND s2.sample_type_id = ?1
                JOIN sample_visibility_ranges r ON r.sample_id = v2.sample_id AND r.version_id = v2.id
                     AND r.first_observation_id <= ?2 AND (r.last_observation_id IS NULL OR r.last_observation_id > ?2)
                WHERE v2.start_date = v.start_date AND v2.end_date = v.end_date AND v2.numeric_value IS v.numeric_value
                  AND v2.category_value IS v.category_value AND v2.sample_id != v.sample_id)
            """, arguments: [typeID, obs]) ?? 0
    }
}
