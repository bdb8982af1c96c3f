/// The diff between two observations of a chain, paged.
enum DiffPageTemplate {
    struct Model { let page: Dashboard.DiffPage; let kind: String? }
    static let template = """
        <h1>Diff #{{page.from}} → #{{page.to}}</h1>
        <p><a href="/chains/{{page.chain}}">Back to the chain</a> · filter: <a href="?from={{page.from}}&amp;to={{page.to}}">all</a>
        · <a href="?from={{page.from}}&amp;to={{page.to}}&amp;kind=appeared">appeared</a> · <a href="?from={{page.from}}&amp;to={{page.to}}&amp;kind=disappeared">disappeared</a>
        · <a href="?from={{page.from}}&amp;to={{page.to}}&amp;kind=changed">changed</a></p>
        <div class="table-wrap"><table class="diff-counts">
        <thead><tr><th>Type</th><th class="num">Appeared</th><th class="num">Disappeared</th><th class="num">Changed</th></tr></thead>
        <tbody>{{#page.counts}}<tr><td>{{typeIdentifier}}</td><td class="num">{{appeared}}</td><td class="num">{{disappeared}}</td><td class="num">{{changed}}</td></tr>{{/page.counts}}</tbody>
        </table></div>
        <h2>Records{{#kind}} ({{kind}}){{/kind}}</h2>
        <div class="table-wrap"><table class="diff">
        <thead><tr><th>Type</th><th>Change</th><th>Before</th><th>After</th></tr></thead>
        <tbody>{{#page.rows}}<tr><td>{{typeIdentifier}}</td><td>{{kind}}</td><td>{{before}}</td><td>{{after}}</td></tr>{{/page.rows}}</tbody>
        </table></div>
        {{#page.nextAfter}}<p class="pager"><a href="?from={{page.from}}&amp;to={{page.to}}{{#kind}}&amp;kind={{kind}}{{/kind}}&amp;after={{page.nextAfter}}">Next records</a></p>{{/page.nextAfter}}
        """
}
