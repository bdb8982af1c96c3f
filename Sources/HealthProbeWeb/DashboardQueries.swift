import Foundation
import GRDB
import HealthProbeArchive
import HealthProbeCanonical
import HealthProbeProtocol
import HealthProbeServer

/// Builds what the pages and the API show, from the registry and each chain's own
/// replica (read-only connections). Blocking: callers run it through `blocking`.
struct DashboardQueries: Sendable {
    let store: ServerStore
    let registry: DeviceRegistry
    let cache: ResultCache
    let readers: ReplicaReaders
    var overlapAnswers = OverlapAnswers()
    /// Clock offsets beyond this many seconds are flagged.
    static let skewSeconds = 300.0
    static let timelinePage = 50
    static let recordsPage = 100

    static func text(_ seconds: Double?) -> String? { seconds.map { CanonicalDate.string($0) } }

    /// The overview: the chains `chains` (already authorized), grouped by person.
    func overview(for person: People.Person, chains: [String]) throws -> Dashboard.Overview {
        var groups: [String: [Dashboard.ChainCard]] = [:]
        for chain in chains {
            let card = try self.card(chain)
            groups[card.person ?? "(no person)", default: []].append(card)
        }
        let people = groups.keys.sorted { a, b in
            // The signed-in person first, then by name.
            if a == person.name { return b != person.name }
            if b == person.name { return false }
            return a < b
        }.map { Dashboard.PersonChains(person: $0, chains: groups[$0]!.sorted { ($0.device ?? "", $0.chain) < ($1.device ?? "", $1.chain) }) }
        return Dashboard.Overview(signedInAs: person.name, role: person.role.rawValue, people: people)
    }

    /// One chain's card: registry facts, the replica's latest observation and summaries, alerts.
    func card(_ chain: String) throws -> Dashboard.ChainCard {
        let facts = try registry.chainFacts(chain)
        let person = try registry.chainPerson(chain)
        let verification = try registry.verification(chain: chain)
        let events = try registry.eventCounts(chain: chain)
        struct Replica { var bundles = 0; var lastSync: Double?; var latest: ObservationRow?; var visible = 0; var types = 0 }
        let r = try readers.read(chain) { db -> Replica in
            var r = Replica()
            let log = try BundleLogRecord.receivedSummary(db)
            r.bundles = log.count
            r.lastSync = log.lastRecordedAt
            if let last = try ObservationQueries.latestID(db) {
                // An observation's counts never change once applied; counting them reads its
                // events (a million for a first capture of that size): counted once.
                r.latest = try cache.value("observation-row|\(chain)|\(last)") { try ObservationQueries.list(db, afterID: last - 1, limit: 1).first }
                let summaries = try AggregateQueries.summaries(db, at: last)
                r.visible = summaries.reduce(0) { $0 + $1.visibleRecordCount }
                r.types = summaries.count
            }
            return r
        }
        var alerts: [Dashboard.Alert] = []
        if !events.isEmpty {
            let total = events.values.reduce(0, +)
            let kinds = events.keys.sorted().map { "\($0) \(events[$0]!)" }.joined(separator: ", ")
            alerts.append(.init(kind: .refusedBundles, message: "\(total) bundle(s) refused, nothing of them stored (\(kinds))"))
        }
        for a in try registry.replacedAttempts(chain: chain) {
            let times = a.count == 1 ? "once" : "\(a.count) times"
            alerts.append(.init(kind: .replacedDevice, message: "\(a.device) was replaced by \(a.replacedBy ?? "another device") and has tried to sync this history "
                                + "\(times) since; nothing of it was stored. If \(a.device) is no longer used, an administrator can revoke it on the admin page"))
        }
        if let offset = facts.clockOffset, abs(offset) > Self.skewSeconds {
            alerts.append(.init(kind: .clockSkew, message: "the device clock is \(Int(offset.rounded())) s \(offset > 0 ? "ahead of" : "behind") the server's"))
        }
        if let latest = r.latest, latest.disappeared > 0 {
            // The classification of that observation (computed once, then cached: it never changes).
            let page = try observation(chain, id: latest.id)
            let lost = page.changes.reduce(0) { $0 + $1.lostRecords }
            let consolidated = page.changes.reduce(0) { $0 + $1.consolidatedRecords }
            let uncertain = page.changes.reduce(0) { $0 + $1.uncertainRecords }
            if lost > 0 {
                let types = page.changes.filter { $0.lostRecords > 0 }.map(\.typeIdentifier)
                alerts.append(.init(kind: .loss, message: "classified loss at observation \(latest.id): \(lost) record(s) in \(types.count) type(s) (\(types.prefix(3).map(TypeCatalogue.name).joined(separator: ", ")))"))
            }
            let rest = [(consolidated, "consolidated"), (uncertain, "uncertain")].filter { $0.0 > 0 }.map { "\($0.0) \($0.1)" }
            alerts.append(.init(kind: .disappeared, message: "\(latest.disappeared) record(s) disappeared at observation \(latest.id)"
                + (rest.isEmpty ? "" : ": " + rest.joined(separator: ", ")) + "; open it for the evidence"))
        }
        if let v = verification, !v.ok {
            alerts.append(.init(kind: .verificationProblem, message: "the last verification (\(v.mode)) found \(v.problems.count) problem(s)"))
        } else if verification == nil {
            alerts.append(.init(kind: .notVerified, message: "never verified; an admin can run verify"))
        }
        // Applied bundles are good syncs too (a replica received before contacts were recorded).
        var known = facts
        known.lastSync = [facts.lastSync, r.lastSync].compactMap { $0 }.max()
        let state = DeviceState.of(known, now: Date().timeIntervalSince1970)
        return Dashboard.ChainCard(
            chain: chain, chainShort: String(chain.prefix(12)), device: facts.device, person: person,
            lastSyncAt: Self.text(known.lastSync),
            deviceState: Self.status(state),
            clockOffsetSeconds: facts.clockOffset, bundles: r.bundles,
            visibleRecords: r.visible, types: r.types, latestObservationID: r.latest?.id, latestObservedAt: Self.text(r.latest?.observedAt),
            latestStatus: r.latest?.status,
            verification: verification.map { .init(checkedAt: CanonicalDate.string($0.checkedAt), mode: $0.mode, ok: $0.ok, problems: $0.problems) },
            alerts: alerts)
    }

    /// A device state for the page and the API.
    static func status(_ s: DeviceState) -> Dashboard.DeviceStatus {
        let since = text(s.since) ?? ""
        let label = switch s.state {
        case .syncing: "up to date"
        case .silent: "silent since \(since)"
        case .refused: "refused since \(since)"
        case .revoked: "revoked on \(since)"
        case .never: "never synced"
        }
        return .init(state: s.state.rawValue, label: label, needsAction: s.state != .syncing, since: text(s.since), reason: s.reason, fix: s.fix,
                     refusalCode: s.refusalCode)
    }

    /// A chain's page: its card, a page of its timeline (after observation `after`), its types now.
    func chainPage(_ chain: String, after: Int64?) throws -> Dashboard.ChainPage {
        let card = try self.card(chain)
        return try readers.read(chain) { db in
            // A page of the timeline changes only when an observation is added (a later id).
            let latest = try ObservationQueries.latestID(db) ?? 0
            let rows = try cache.value("timeline|\(chain)|\(after ?? 0)|\(latest)") {
                try ObservationQueries.list(db, afterID: after ?? 0, limit: Self.timelinePage + 1)
            }
            let timeline = rows.prefix(Self.timelinePage).map {
                Dashboard.TimelineRow(observationID: $0.id, observedAt: CanonicalDate.string($0.observedAt), status: $0.status, trigger: $0.triggerReason,
                                      typeRuns: $0.typeRuns, appeared: $0.appeared, disappeared: $0.disappeared, changed: $0.changed)
            }
            var types: [Dashboard.TypeRow] = []
            if let last = card.latestObservationID {
                types = try AggregateQueries.summaries(db, at: last).map {
                    .init(typeIdentifier: $0.typeIdentifier, typeName: TypeCatalogue.name($0.typeIdentifier), unit: TypeCatalogue.info($0.typeIdentifier).unit,
                          visibleRecords: $0.visibleRecordCount, earliestStart: Self.text($0.earliestStartDate),
                          latestEnd: Self.text($0.latestEndDate), valueSum: $0.valueSum, valueMax: $0.valueMax)
                }
            }
            return Dashboard.ChainPage(card: card, timeline: Array(timeline), nextAfter: rows.count > Self.timelinePage ? timeline.last?.observationID : nil,
                                       types: types)
        }
    }

    /// One observation: per-type changes, classified against the previous observation.
    func observation(_ chain: String, id: Int64) throws -> Dashboard.ObservationPage {
        try cache.value("observation|\(chain)|\(id)") { try classified(chain, id: id) }
    }

    func classified(_ chain: String, id: Int64) throws -> Dashboard.ObservationPage {
        try readers.read(chain) { db in
            guard let row = try ObservationQueries.observedAtAndStatus(db, id: id) else {
                throw WebError(.notFound, "no observation \(id) in this chain")
            }
            let previous = try ObservationQueries.previousID(db, before: id)
            let changes = try ObservationQueries.changes(db, observationID: id)
            var report: ChangeReport?
            if let previous { report = try ChangeClassifier.classify(db, diff: ObservationDiff.prepare(db, from: previous, to: id)) }
            let byType = Dictionary((report?.types ?? []).map { ($0.typeIdentifier, $0) }, uniquingKeysWith: { a, _ in a })
            let lossTypes = (report?.types ?? []).filter { $0.verdict == .loss }.map(\.typeIdentifier)
            return Dashboard.ObservationPage(
                lossTypes: lossTypes, lossTypeNames: lossTypes.map(TypeCatalogue.name).joined(separator: ", "), hasLoss: !lossTypes.isEmpty,
                chain: chain, observationID: id, observedAt: CanonicalDate.string(row.observedAt), status: row.status,
                previousObservationID: previous,
                changes: changes.map { c in
                    let k = byType[c.typeIdentifier]
                    return .init(typeIdentifier: c.typeIdentifier, typeName: TypeCatalogue.name(c.typeIdentifier), runStatus: c.runStatus, appeared: c.appeared, disappeared: c.disappeared,
                                 changed: c.changed, visibleAfter: c.visibleAfter,
                                 verdict: k?.verdict.rawValue ?? (c.appeared + c.disappeared + c.changed == 0 ? "no_change" : "first"),
                                 reasons: k?.reasons ?? [], labels: k?.labels.map(\.rawValue) ?? [],
                                 uncertainty: k?.uncertainty ?? [], lostRecords: k?.lostRecords ?? 0,
                                 consolidatedRecords: k?.consolidatedRecords ?? 0, uncertainRecords: k?.uncertainRecords ?? 0,
                                 evidence: [("lost", k?.lostRecords ?? 0), ("consolidated", k?.consolidatedRecords ?? 0), ("uncertain", k?.uncertainRecords ?? 0)]
                                    .filter { $0.1 > 0 }.map { "\($0.0) \($0.1)" }.joined(separator: " · "))
                },
                manyTypesShifting: report?.manyTypesShifting ?? false,
                captureWindow: CaptureWindowNote.parse(try ObservationQueries.notes(db, id: id))?.words,
                lateTypes: try ObservationLateness.byType(db, observationID: id).filter { $0.value >= 3600 }.sorted { $0.key < $1.key }.map {
                    .init(typeIdentifier: $0.key, typeName: TypeCatalogue.name($0.key), lateSeconds: $0.value,
                          words: "up to \(Self.hoursText($0.value)) after their own time")
                })
        }
    }

    /// A page of what was visible at observation `id`, of `type` when given, starting on the
    /// device's local days `from` through `to` (`YYYY-MM-DD`) when given.
    func visible(_ chain: String, id: Int64, type: String?, cursor: String?, from: String? = nil, to: String? = nil) throws -> Dashboard.VisiblePage {
        var after: PointInTime.Cursor?
        if let cursor {
            guard let c = PointInTime.Cursor(token: cursor), c.typeID > 0, c.fingerprint.utf8.count <= 128 else {
                throw WebError(.badRequest, "cursor is not one this server gave out")
            }
            after = c
        }
        return try readers.read(chain) { db in
            guard try ObservationQueries.exists(db, id: id) else {
                throw WebError(.notFound, "no observation \(id) in this chain")
            }
            let zone = try LocalDays.of(db, observation: id)
            /// UTC start of a local day of the device.
            func start(_ day: String) -> Double? {
                ChartRange.midnight(day).map { $0 - Double(zone.timeZone.secondsFromGMT(for: Date(timeIntervalSince1970: $0))) }
            }
            let scope = SnapshotScope(observationID: id, typeIdentifier: type, from: from.flatMap(start), to: to.flatMap(start).map { $0 + 86_400 })
            let page = try PointInTime.page(db, scope, after: after, limit: Self.recordsPage)
            return Dashboard.VisiblePage(chain: chain, observationID: id, typeIdentifier: type, records: page.rows.map {
                .init(typeIdentifier: $0.typeIdentifier, start: CanonicalDate.string($0.startDate), end: CanonicalDate.string($0.endDate),
                      value: Self.value($0.numericValue, TypeCatalogue.info($0.typeIdentifier).unit ?? $0.unit, $0.categoryValue, type: $0.typeIdentifier), payloadHash: $0.payloadHash, visibleSince: $0.visibleSince,
                      typeName: TypeCatalogue.name($0.typeIdentifier), localStart: zone.time($0.startDate))
            }, next: page.next?.token, zone: zone.zoneName)
        }
    }

    /// A delay in hours or days, as people say it: "11 h", "3 days".
    static func hoursText(_ seconds: Double) -> String {
        guard seconds.isFinite, seconds >= 0 else { return "-" }
        let hours = Int((seconds / 3600).rounded())
        return hours < 48 ? "\(hours) h" : "\(hours / 24) days"
    }

    /// A record's value as people read it: the number with its unit, or the category state's name.
    static func value(_ numeric: Double?, _ unit: String?, _ category: Int64?, type: String) -> String {
        if let numeric { return "\(ECMAScriptNumber.format(numeric) ?? "?")\(unit.map { " " + $0 } ?? "")" }
        if let category { return TypeCatalogue.stateName(type, category) }
        return ""
    }

    /// A type's days in one chain at observation `at` (default: the latest), within `[from, to)`.
    func series(_ chain: String, type: String, at: Int64?, from: Double?, to: Double?) throws -> Dashboard.TypeSeries {
        let info = try registry.chainInfo(chain)
        let person = try registry.chainPerson(chain)
        return try readers.read(chain) { db in
            guard let obs = try at ?? ObservationQueries.latestID(db) else {
                return Dashboard.TypeSeries(chain: chain, chainShort: String(chain.prefix(12)), device: info.device, person: person, typeIdentifier: type,
                                            observationID: nil, clockOffsetSeconds: info.clockOffset, days: [])
            }
            guard try ObservationQueries.exists(db, id: obs) else {
                throw WebError(.notFound, "no observation \(obs) in this chain")
            }
            let days = try cache.value("days|\(chain)|\(type)|\(obs)|\(from ?? -1)|\(to ?? -1)") { try Self.days(db, at: obs, type: type, from: from, to: to) }
            let states = TypeCatalogue.info(type).statistic != .duration ? nil
                : try cache.value("states|\(chain)|\(type)|\(obs)|\(from ?? -1)|\(to ?? -1)") { try Self.stateDays(db, at: obs, type: type, from: from, to: to) }
            return Dashboard.TypeSeries(chain: chain, chainShort: String(chain.prefix(12)), device: info.device, person: person, typeIdentifier: type,
                                        observationID: obs, clockOffsetSeconds: info.clockOffset, days: days, stateDays: states)
        }
    }

    /// A category type's time per state on each local day at an observation, states in the
    /// catalogue's order (unknown values after, by number).
    static func stateDays(_ db: Database, at obs: Int64, type: String, from: Double?, to: Double?) throws -> [Dashboard.StateDay] {
        let known = TypeCatalogue.states(type)
        return try CategoryDurations.daily(db, at: obs, typeIdentifier: type, from: from, to: to).map { d in
            let order = known.map(\.value) + d.seconds.keys.filter { v in !known.contains { $0.value == v } }.sorted()
            let states = order.compactMap { v -> Dashboard.StateTime? in
                guard let seconds = d.seconds[v] else { return nil }
                let state = known.first { $0.value == v }
                return .init(value: v, name: v < 0 ? "no state" : TypeCatalogue.stateName(type, v), seconds: seconds, spansOthers: state?.spansOthers ?? false)
            }
            return Dashboard.StateDay(day: d.day, start: d.start, records: d.records, states: states)
        }
    }

    /// A type's local days at an observation, all source revisions of the chain summed per day.
    static func days(_ db: Database, at obs: Int64, type: String, from: Double?, to: Double?) throws -> [Dashboard.Day] {
            var days: [Dashboard.Day] = []
            // Days are named in the zone they were bucketed in (the aggregates' base observation's):
            // a Berlin device's Monday is Monday, not the UTC date of its midnight.
            let base = try AggregateQueries.summaries(db, at: obs, typeIdentifier: type).first?.dailyBaseObservationID ?? obs
            let zone = try LocalDays.of(db, observation: base)
            for d in try AggregateQueries.daily(db, at: obs, typeIdentifier: type, from: from, to: to) {
                if let last = days.last, last.start == d.bucketStart {
                    var merged = last
                    merged.records += d.visibleRecordCount
                    if let s = d.valueSum { merged.valueSum = (merged.valueSum ?? 0) + s }
                    if let m = d.valueMax { merged.valueMax = max(merged.valueMax ?? m, m) }
                    merged.sourceRevisions += 1
                    days[days.count - 1] = merged
                } else {
                    days.append(.init(day: zone.date(d.bucketStart), start: d.bucketStart, records: d.visibleRecordCount,
                                      valueSum: d.valueSum, valueMax: d.valueMax, sourceRevisions: 1))
                }
            }
            return days
    }

    /// A type across `chains`, each at its latest observation, with the pairs of them that
    /// hold identical records: the pairs of `householdOverlaps` whose both chains are shown.
    /// A pair's count involves only its two chains, so one merge over every chain of the
    /// server answers every viewer (each sees only pairs of chains they may read). The count
    /// shown is the last one made (`shownOverlaps`): while the warmer runs, a page does not
    /// wait for a count. Whether it is current is judged on the chains shown alone, so a
    /// sync of a chain the viewer may not read changes nothing they see.
    func across(_ chains: [String], type: String, from: Double?, to: Double?) throws -> Dashboard.TypeAcross {
        let series = try chains.map { try self.series($0, type: type, at: nil, from: from, to: to) }.filter { !$0.days.isEmpty }
        let shown = Set(series.map(\.chain))
        // One chain shown has no pair: no count is needed (nor waited for).
        guard shown.count >= 2 else {
            return Dashboard.TypeAcross(typeIdentifier: type, series: series, overlaps: [], overlapsCountedAt: nil, overlapsCurrent: true, overlapsCountFailed: false)
        }
        let now = try overlapKey(type: type)
        let counted = try shownOverlaps(type: type, key: now)
        let overlaps = (counted?.pairs ?? [])
            .filter { $0.identicalStrictFingerprints > 0 && $0.chains.allSatisfy(shown.contains) }
            .map { Dashboard.Overlap(chains: $0.chains, identicalRecords: $0.identicalStrictFingerprints) }
        let current = counted.map { c in shown.allSatisfy { c.sequences[$0] != nil && c.sequences[$0] == now.sequences[$0] } } ?? false
        return Dashboard.TypeAcross(typeIdentifier: type, series: series, overlaps: overlaps,
                                    overlapsCountedAt: counted.flatMap { Self.text($0.countedAt) },
                                    overlapsCurrent: current, overlapsCountFailed: overlapAnswers.lastCountFailed(type))
    }

    /// What the pages show of `type`'s overlaps. While the warmer runs: the last count, even
    /// when a chain has synced since (the warmer counts again), and nil when there is none yet
    /// (the page says they are being counted); a page never counts. Without the warmer: the
    /// last count when it is current, else a count made now (nil when one is under way).
    func shownOverlaps(type: String, key: OverlapKey) throws -> OverlapAnswers.Answer? {
        let last = overlapAnswers.answer(type)
        if overlapAnswers.warmerRunning { return last }
        if let last, last.key == key.text { return last }
        try householdOverlaps(type: type, key: key)
        return overlapAnswers.answer(type)
    }

    /// The server's chains and each one's last received bundle: what a count is keyed by.
    struct OverlapKey: Sendable {
        let text: String
        /// The chains in the server's order, and each one's last sequence.
        let chains: [String]
        let sequences: [String: Int]
    }

    func overlapKey(type: String) throws -> OverlapKey {
        let chains = try store.chains()
        var sequences: [String: Int] = [:]
        for chain in chains { sequences[chain] = try latestSequence(chain) }
        return OverlapKey(text: "overlaps|\(type)|" + chains.map { "\($0)@\(sequences[$0]!)" }.joined(separator: ","),
                          chains: chains, sequences: sequences)
    }

    /// Per pair of the server's chains, the visible records of `type` they both hold: one
    /// merge over every chain (`HouseholdSummary.overlaps`), counted again only when one of
    /// them has received a bundle since (the key names each chain's last sequence), and never
    /// twice at once (nil: another count of the type is under way). `OverlapWarmer` counts
    /// ahead of the pages. Never returned to anyone as a whole.
    @discardableResult
    func householdOverlaps(type: String, key given: OverlapKey? = nil) throws -> [HouseholdSummary.SharedSources]? {
        let key = try given ?? overlapKey(type: type)
        switch overlapAnswers.startCounting(type, key: key.text) {
        case .current(let answer): return answer.pairs
        case .underWay: return nil
        case .start: break
        }
        var answer: OverlapAnswers.Answer?
        defer { overlapAnswers.finishCounting(type, answer) }
        let started = Date().timeIntervalSince1970
        let pairs = try HouseholdSummary.overlaps(store, chains: key.chains, type: type)
        answer = .init(key: key.text, sequences: key.sequences, countedAt: started, pairs: pairs)
        return pairs
    }

    /// Computes (or finds current) `householdOverlaps` of every type two or more chains hold;
    /// returns how many types that was. A type whose count fails is recorded as failed (the
    /// page says so) and the others are counted all the same; the first error is thrown after.
    @discardableResult
    func warmOverlaps() throws -> Int {
        // Each round also closes kept connections to replicas discarded since.
        readers.sweep()
        var holders: [String: Int] = [:]
        var firstError: (any Error)?
        for chain in try store.chains() {
            do {
                for type in try readers.read(chain, { try SharedSourceQueries.typeIDs($0, type: nil) }).keys { holders[type, default: 0] += 1 }
            } catch { firstError = firstError ?? error }
        }
        let types = holders.filter { $0.value >= 2 }.keys.sorted()
        for type in types {
            do { try householdOverlaps(type: type) } catch {
                overlapAnswers.countFailed(type)
                firstError = firstError ?? error
            }
        }
        if let firstError { throw firstError }
        return types.count
    }

    /// The last bundle received for a chain: what a cached cross-chain answer is keyed by.
    func latestSequence(_ chain: String) throws -> Int { try readers.lastSequence(chain) }

    /// A page of the diff between two observations of a chain.
    func diff(_ chain: String, from: Int64, to: Int64, kind: DiffKind?, after: Int64?) throws -> Dashboard.DiffPage {
        try readers.read(chain) { db in
            let diff: ObservationDiff
            do { diff = try ObservationDiff.prepare(db, from: from, to: to) } catch let e as ArchiveError where e.code == .notFound {
                throw WebError(.notFound, "both observations must belong to this chain")
            }
            let rows = try diff.page(db, kind: kind, afterSampleID: after ?? 0, limit: Self.recordsPage + 1)
            let zone = try LocalDays.of(db, observation: to)
            func show(_ v: VersionView?, _ type: String) -> String? {
                v.map { "\(zone.time($0.startDate)): \(Self.value($0.numericValue, TypeCatalogue.info(type).unit ?? $0.unit, $0.categoryValue, type: type))" }
            }
            let page = rows.prefix(Self.recordsPage).map {
                Dashboard.DiffRow(sampleID: $0.sampleID, typeIdentifier: $0.typeIdentifier, typeName: TypeCatalogue.name($0.typeIdentifier), kind: $0.kind.rawValue,
                                  before: show($0.before, $0.typeIdentifier), after: show($0.after, $0.typeIdentifier))
            }
            return Dashboard.DiffPage(chain: chain, from: from, to: to, counts: try diff.counts(db), rows: Array(page),
                                      nextAfter: rows.count > Self.recordsPage ? page.last?.sampleID : nil)
        }
    }
}
