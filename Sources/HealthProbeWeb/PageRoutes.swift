import Foundation
import HealthProbeArchive
import HealthProbeCanonical
import HealthProbeServer
import Hummingbird

/// The dashboard's pages: each reads through `DashboardQueries`, as the API does.
extension WebServer {
    func addPageRoutes(_ router: Router<WebContext>) {
        router.get("/") { _, context in
            let person = try await access.person(context)
            let overview = try await overview(person)
            return pages.render("overview", OverviewPage.Model(people: overview.people, isAdmin: person.role == .admin),
                                chrome: chrome("Household", person, context))
        }
        router.get("/chains/{chain}") { request, context in
            let person = try await access.person(context)
            let chain = try await access.chain(context, for: person)
            let after = try Params.queryID(request, "after")
            let q = queries, registry = self.registry
            let (page, canShare, shares, people) = try await blocking {
                let canShare = try registry.canShare(person, chain: chain)
                var page = try q.chainPage(chain, after: after)
                page.card = ChainGlance.apply(page.card, now: Self.now())
                return (page, canShare,
                        canShare ? try registry.shares(chain: chain).map(\.person) : [],
                        canShare ? try registry.people().map(\.name).filter { $0 != person.name } : [])
            }
            return pages.render("chain", ChainPageTemplate.Model(page: page, canShare: canShare, shares: shares, people: people,
                                                                 csrf: context.sessions.session?.csrf ?? "", typeLines: page.types.map(ChainPageTemplate.line)),
                                chrome: chrome(page.card.device ?? "Chain", person, context))
        }
        router.get("/chains/{chain}/observations/{observation}") { request, context in
            let person = try await access.person(context)
            let (page, gone) = try await observationEvidence(request, context, person)
            let choices = page.changes.filter { $0.disappeared > 0 }.map {
                ObservationPageTemplate.Choice(value: $0.typeIdentifier, label: $0.typeName, selected: $0.typeIdentifier == gone.typeIdentifier)
            }
            let next = gone.nextAfter.map { after in (gone.typeIdentifier.map { "type=\($0)&" } ?? "") + "after=\(after)" }
            return pages.render("observation", ObservationPageTemplate.Model(page: page, disappeared: gone, typeChoices: choices, nextQuery: next),
                                chrome: chrome("Observation \(page.observationID)", person, context))
        }
        router.get("/chains/{chain}/observations/{observation}/visible") { request, context in
            let person = try await access.person(context)
            let page = try await visiblePage(request, context, person)
            let days = try Params.chartRange(request)
            var next: String?
            if let c = page.next {
                var parts = ["cursor=" + (c.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")]
                if let type = page.typeIdentifier { parts.append("type=" + type) }
                if let f = days.from { parts.append("from=" + f) }
                if let t = days.to { parts.append("to=" + t) }
                next = parts.joined(separator: "&")
            }
            let q = queries
            let types = try await blocking { try q.observation(page.chain, id: page.observationID) }.changes.filter { ($0.visibleAfter ?? 0) > 0 }.map {
                ObservationPageTemplate.Choice(value: $0.typeIdentifier, label: $0.typeName, selected: $0.typeIdentifier == page.typeIdentifier)
            }
            return pages.render("visible", VisiblePageTemplate.Model(page: page, nextQuery: next, types: types, from: days.from ?? "", to: days.to ?? ""),
                                chrome: chrome("Visible records", person, context))
        }
        router.get("/chains/{chain}/types/{type}") { request, context in
            let person = try await access.person(context)
            let asked = try Params.query(request, "metric")
            let range = try Params.chartRange(request)
            let (chain, type, series) = try await chainSeries(request, context, person)
            let metric = Chart.metric(asked, for: type)
            return pages.render("type", typeModel(type, [series], overlaps: [], metric: metric, chain: chain, at: series.observationID, range: range),
                                chrome: chrome(TypeCatalogue.name(type), person, context))
        }
        router.get("/types/{type}") { request, context in
            let person = try await access.person(context)
            let type = try Params.typeIdentifier(context.parameters.get("type"))
            let metric = Chart.metric(try Params.query(request, "metric"), for: type)
            let range = try Params.chartRange(request)
            let across = try await across(person, type: type, range: range)
            var model = typeModel(type, across.series, overlaps: across.overlaps, metric: metric, chain: nil, at: nil, range: range)
            model.overlapNote = Self.overlapNote(across, now: Self.now())
            return pages.render("type", model, chrome: chrome(TypeCatalogue.name(type), person, context))
        }
        router.get("/chains/{chain}/diff") { request, context in
            let person = try await access.person(context)
            let (page, kind) = try await diffPage(request, context, person)
            return pages.render("diff", DiffPageTemplate.Model(page: page, kind: kind?.rawValue), chrome: chrome("Diff", person, context))
        }
        router.post("/chains/{chain}/shares") { request, context in
            struct ShareForm: Decodable { let csrf: String?; let person: String; let action: String }
            let person = try await access.person(context)
            let form = try await Forms.decode(ShareForm.self, request)
            try Self.checkCSRF(form.csrf, context)
            let chain = try await access.chain(context, for: person)
            try await changeShare(person, chain: chain, with: form.person, share: form.action == "share", via: .web)
            return Responses.redirect("/chains/\(chain)")
        }
    }

    /// The path's observation with a page of the records that disappeared there (`type=`, `after=`).
    func observationEvidence(_ request: Request, _ context: WebContext, _ person: People.Person) async throws -> (Dashboard.ObservationPage, Dashboard.DisappearedPage) {
        let gone = try await disappearedPage(request, context, person)
        let q = queries
        return (try await blocking { try q.observation(gone.chain, id: gone.observationID) }, gone)
    }

    /// A page of the records that disappeared at the path's observation (`type=`, `after=`): page and API.
    func disappearedPage(_ request: Request, _ context: WebContext, _ person: People.Person) async throws -> Dashboard.DisappearedPage {
        let chain = try await access.chain(context, for: person)
        let id = try Params.id(context, "observation")
        let type = try Params.query(request, "type").map { try Params.typeIdentifier($0) }
        let after = try Params.queryID(request, "after")
        let q = queries
        return try await blocking { try q.disappeared(chain, id: id, type: type, after: after) }
    }

    /// A page of what was visible at the path's observation, for the page and the API.
    func visiblePage(_ request: Request, _ context: WebContext, _ person: People.Person) async throws -> Dashboard.VisiblePage {
        let chain = try await access.chain(context, for: person)
        let id = try Params.id(context, "observation")
        let type = try Params.query(request, "type").map { try Params.typeIdentifier($0) }
        let cursor = try Params.query(request, "cursor")
        let days = try Params.chartRange(request)
        let q = queries
        return try await blocking { try q.visible(chain, id: id, type: type, cursor: cursor, from: days.from, to: days.to) }
    }

    /// One chain's daily series of the type in the path, as of `?at=` (page and API).
    func chainSeries(_ request: Request, _ context: WebContext, _ person: People.Person) async throws -> (chain: String, type: String, series: Dashboard.TypeSeries) {
        let chain = try await access.chain(context, for: person)
        let type = try Params.typeIdentifier(context.parameters.get("type"))
        let at = try Params.queryID(request, "at")
        let range = try Params.chartRange(request)
        let q = queries
        let series = try await blocking { try q.series(chain, type: type, at: at, from: nil, to: nil) }
        return (chain, type, range.apply(series, now: Self.now()))
    }

    /// A page of the diff between `?from=` and `?to=`, with the kind it was filtered by (page and API).
    func diffPage(_ request: Request, _ context: WebContext, _ person: People.Person) async throws -> (page: Dashboard.DiffPage, kind: DiffKind?) {
        let chain = try await access.chain(context, for: person)
        let (from, to) = try Params.diffBounds(request)
        let kind = try Params.diffKind(request)
        let after = try Params.queryID(request, "after")
        let q = queries
        return (try await blocking { try q.diff(chain, from: from, to: to, kind: kind, after: after) }, kind)
    }

    /// The overview of what `person` may read, each chain at a glance.
    func overview(_ person: People.Person) async throws -> Dashboard.Overview {
        let chains = try await access.readableChains(person)
        let q = queries
        var overview = try await blocking { try q.overview(for: person, chains: chains) }
        let now = Self.now()
        for i in overview.people.indices {
            overview.people[i].chains = overview.people[i].chains.map { ChainGlance.apply($0, now: now) }
        }
        return overview
    }

    /// A type across the chains `person` may read, each chain's days within `range`.
    func across(_ person: People.Person, type: String, range: ChartRange) async throws -> Dashboard.TypeAcross {
        let chains = try await access.readableChains(person)
        let q = queries
        var across = try await blocking { try q.across(chains, type: type, from: nil, to: nil) }
        let now = Self.now()
        across.series = across.series.map { range.apply($0, now: now) }
        return across
    }

    /// Shares a chain with a person or takes it back: admins, and members for their own chains.
    func changeShare(_ person: People.Person, chain: String, with other: String, share: Bool, via: Audit.Actor.Via) async throws {
        let registry = self.registry
        try await blocking {
            guard try registry.canShare(person, chain: chain) else {
                throw WebError(.forbidden, "only an admin or the chain's own person may share it")
            }
            let actor = Audit.Actor(name: person.name, via: via)
            if share { try registry.share(chain: chain, with: other, now: Self.now(), by: actor) } else { try registry.unshare(chain: chain, from: other, by: actor) }
        }
    }

    /// What the all-chains page says of its shared-records notes when they are not a count of
    /// every chain's latest bundle: being counted for the first time, or counted before a sync.
    static func overlapNote(_ across: Dashboard.TypeAcross, now: Double) -> String? {
        guard across.series.count >= 2, !across.overlapsCurrent || across.overlapsCountFailed else { return nil }
        guard let at = across.overlapsCountedAt, let counted = CanonicalDate.parse(at) else {
            return across.overlapsCountFailed
                ? "The records these devices may share could not be counted; the server's log says why."
                : "The records these devices may share are being counted; reload the page in a minute to see them."
        }
        if across.overlapsCountFailed {
            return "Records shared between devices as counted \(ChainGlance.ago(now - counted)); counting them again failed, and the server's log says why."
        }
        return "Records shared between devices as counted \(ChainGlance.ago(now - counted)), before the latest sync; they are being counted again."
    }

    func typeModel(_ type: String, _ series: [Dashboard.TypeSeries], overlaps: [Dashboard.Overlap], metric: Chart.Metric,
                   chain: String?, at: Int64?, range: ChartRange) -> TypePageTemplate.Model {
        let now = Self.now()
        /// A panel's drawing, made once for its chain's observation, range and names (an
        /// observation's days never change), then kept: drawing was half the server's time
        /// under load at household scale (`hp-bench web`, 12 chains of 1,000,000 samples).
        func svg(_ s: Dashboard.TypeSeries, compact: Bool) -> String {
            let b = range.bounds(s, now: now)
            // A panel spans its range's days when the range names both ends (a preset always does).
            let span = b.from.flatMap { f in b.to.map { (f, $0) } }
            guard let obs = s.observationID else { return Chart.svg(s, metric: metric, span: span, compact: compact) }
            let key = [s.chain, type, String(obs), metric.rawValue, b.from ?? "-", b.to ?? "-", compact ? "c" : "w",
                       s.device ?? "-", s.person ?? "-", String(s.days.count), s.days.first?.day ?? "-", s.days.last?.day ?? "-",
                       String(s.stateDays?.count ?? -1), s.stateDays?.first?.day ?? "-", s.stateDays?.last?.day ?? "-"].joined(separator: "|")
            return charts.value(key) { Chart.svg(s, metric: metric, span: span, compact: compact) }
        }
        let keep = [at.map { "at=\($0)" }, "metric=\(metric.rawValue)"].compactMap { $0 }.joined(separator: "&")
        return TypePageTemplate.Model(
            typeIdentifier: type, typeName: TypeCatalogue.name(type), unit: TypeCatalogue.info(type).unit,
            panels: series.map { .init(series: $0, svg: svg($0, compact: false), compactSVG: svg($0, compact: true),
                                       skew: abs($0.clockOffsetSeconds ?? 0) > DashboardQueries.skewSeconds) },
            overlaps: overlaps.map { o in
                let names = o.chains.map { chain in
                    let s = series.first { $0.chain == chain }
                    let device = s?.device ?? "a device"
                    return s?.person.map { "\(device) (\($0))" } ?? device
                }
                return .init(names: names.dropLast().joined(separator: ", ") + (names.count > 1 ? " and " : "") + (names.last ?? ""), identicalRecords: o.identicalRecords)
            }, metric: Chart.label(metric, type: type),
            otherMetrics: Chart.metrics(for: type).filter { $0 != metric }.map { .init(value: $0.rawValue, label: Chart.label($0, type: type)) },
            chain: chain, at: at, metricValue: metric.rawValue,
            ranges: ChartRange.Preset.allCases.map { .init(label: $0.label, query: "range=\($0.rawValue)&" + keep, current: range.preset == $0) },
            rangeWords: range.words, rangeQuery: range.query,
            from: range.from ?? "", to: range.to ?? "",
            legend: Chart.legend(series, metric: metric).map { .init(name: $0.name, css: $0.css) },
            hasLegend: !Chart.legend(series, metric: metric).isEmpty)
    }
}
