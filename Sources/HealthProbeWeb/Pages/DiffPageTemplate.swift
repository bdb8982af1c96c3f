import HealthProbeArchive

/// The diff between two observations of a chain, paged, with types by name and a download.
enum DiffPageTemplate {
    struct Model {
        let page: Dashboard.DiffPage
        let kind: String?
        let counts: [CountLine]
        let rows: [RowLine]
        init(page: Dashboard.DiffPage, kind: String?) {
            self.page = page
            self.kind = kind
            counts = page.counts.map { CountLine(typeIdentifier: $0.typeIdentifier, typeName: TypeCatalogue.name($0.typeIdentifier),
                                                 appeared: $0.appeared, disappeared: $0.disappeared, changed: $0.changed) }
            rows = page.rows.map { RowLine(typeIdentifier: $0.typeIdentifier, typeName: TypeCatalogue.name($0.typeIdentifier),
                                           kind: $0.kind, before: $0.before, after: $0.after) }
        }
    }
    struct CountLine { let typeIdentifier: String; let typeName: String; let appeared: Int; let disappeared: Int; let changed: Int }
    struct RowLine { let typeIdentifier: String; let typeName: String; let kind: String; let before: String?; let after: String? }
    static let template = """
        <h1>What changed from #{{page.from}} to #{{page.to}}</h1>
        <p><a href="/chains/{{page.chain}}">Back to the chain</a> · show: <a href="?from={{page.from}}&amp;to={{page.to}}">all</a>
        · <a href="?from={{page.from}}&amp;to={{page.to}}&amp;kind=appeared">appeared</a> · <a href="?from={{page.from}}&amp;to={{page.to}}&amp;kind=disappeared">disappeared</a>
        · <a href="?from={{page.from}}&amp;to={{page.to}}&amp;kind=changed">changed</a>
        · <a href="/chains/{{page.chain}}/export?kind=diff&amp;from={{page.from}}&amp;to={{page.to}}">download this diff (verifiable JSON)</a></p>
        <div class="table-wrap"><table class="diff-counts reflow">
        <thead><tr><th>Type</th><th class="num">Appeared</th><th class="num">Disappeared</th><th class="num">Changed</th></tr></thead>
        <tbody>{{#counts}}<tr><td data-label="Type" title="{{typeIdentifier}}"><strong>{{typeName}}</strong></td><td data-label="Appeared" class="num">{{appeared}}</td><td data-label="Disappeared" class="num">{{disappeared}}</td><td data-label="Changed" class="num">{{changed}}</td></tr>{{/counts}}</tbody>
        </table></div>
        {{^counts}}<p>Nothing differs between these two observations.</p>{{/counts}}
        <h2>Records{{#kind}} ({{kind}}){{/kind}}</h2>
        <div class="table-wrap"><table class="diff reflow">
        <thead><tr><th>Type</th><th>Change</th><th>Before</th><th>After</th></tr></thead>
        <tbody>{{#rows}}<tr><td data-label="Type" title="{{typeIdentifier}}">{{typeName}}</td><td data-label="Change">{{kind}}</td><td data-label="Before">{{before}}</td><td data-label="After">{{after}}</td></tr>{{/rows}}</tbody>
        </table></div>
        {{#page.nextAfter}}<p class="pager"><a href="?from={{page.from}}&amp;to={{page.to}}{{#kind}}&amp;kind={{kind}}{{/kind}}&amp;after={{page.nextAfter}}">Next records</a></p>{{/page.nextAfter}}
        """
}
