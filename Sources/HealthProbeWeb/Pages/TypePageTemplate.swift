/// A type's daily chart: one chain (as of any observation) or every readable chain side by side.
enum TypePageTemplate {
    struct Panel { let series: Dashboard.TypeSeries; let svg: String; let skew: Bool }
    struct Model {
        let typeIdentifier: String
        /// The friendly name and display unit (`TypeCatalogue`).
        let typeName: String
        let unit: String?
        let panels: [Panel]
        let overlaps: [Dashboard.Overlap]
        /// The metric shown, in words, and the others that fit the type.
        let metric: String
        let otherMetrics: [OtherMetric]
        let chain: String?
        let at: Int64?
        let metricValue: String
    }
    struct OtherMetric { let value: String; let label: String }
    static let template = """
        <h1>{{typeName}} <span class="muted hash">{{typeIdentifier}}</span></h1>
        {{#unit}}<p class="muted">Values in {{unit}}.</p>{{/unit}}
        <p>Each bar: {{metric}}, per chain, each as its device saw it: chains are shown side by side and never merged.
        {{#otherMetrics}}<a href="?metric={{value}}{{#at}}&amp;at={{at}}{{/at}}">Show {{label}}</a> {{/otherMetrics}}{{#chain}} · <a href="/types/{{typeIdentifier}}">all chains</a>{{/chain}}</p>
        {{#overlaps}}<p class="alert overlap">Chains <span class="hash">{{#chains}}{{.}} {{/chains}}</span> share {{identicalRecords}} identical record(s) of this type: possibly one source seen by two devices; do not add them up.</p>{{/overlaps}}
        <div class="side-by-side">
        {{#panels}}
        <figure class="panel" data-chain="{{series.chain}}">
        {{{svg}}}
        <figcaption>{{#series.device}}{{series.device}}{{/series.device}} <span class="hash muted">{{series.chainShort}}</span>{{#series.person}} · {{series.person}}{{/series.person}}
        · observation #{{series.observationID}}{{#skew}} · <span class="bad">clock skew {{series.clockOffsetSeconds}} s</span>{{/skew}}
        · <a href="/chains/{{series.chain}}/types/{{series.typeIdentifier}}">as of another observation</a></figcaption>
        </figure>
        {{/panels}}
        </div>
        {{^panels}}<p>No chain you can read has visible records of this type in this window.</p>{{/panels}}
        {{#chain}}
        <form method="get" class="stack">
        <input type="hidden" name="metric" value="{{metricValue}}">
        <label>As of observation <input name="at" inputmode="numeric" pattern="[0-9]+" value="{{at}}"></label>
        <button type="submit">Show</button>
        </form>
        {{/chain}}
        """
}
