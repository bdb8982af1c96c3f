/// A type's daily chart: one chain (as of any observation) or every readable chain side by side.
enum TypePageTemplate {
    struct Panel { let series: Dashboard.TypeSeries; let svg: String; let compactSVG: String; let skew: Bool }
    struct Model {
        let typeIdentifier: String
        /// The friendly name and display unit (`TypeCatalogue`).
        let typeName: String
        let unit: String?
        let panels: [Panel]
        let overlaps: [OverlapLine]
        /// Said when the shared-records notes are not a count of every chain's latest bundle.
        var overlapNote: String? = nil
        /// The metric shown, in words, and the others that fit the type.
        let metric: String
        let otherMetrics: [OtherMetric]
        let chain: String?
        let at: Int64?
        let metricValue: String
        /// The time ranges offered (the current one marked), the one shown in words, and its query.
        let ranges: [RangeLink]
        let rangeWords: String
        let rangeQuery: String
        let from: String
        let to: String
        /// The states a category type's chart stacks, with their colours (empty for other charts).
        let legend: [LegendItem]
        let hasLegend: Bool
    }
    struct LegendItem { let name: String; let css: String }
    struct OtherMetric { let value: String; let label: String }
    /// Chains with identical records, named by device and person.
    struct OverlapLine { let names: String; let identicalRecords: Int }
    struct RangeLink { let label: String; let query: String; let current: Bool }
    static let template = """
        <h1>{{typeName}}</h1>
        <p class="muted">{{#unit}}Values in {{unit}}. {{/unit}}Apple Health calls this type <span class="hash">{{typeIdentifier}}</span>.</p>
        <p>Each bar: {{metric}}, per chain, each as its device saw it: chains are shown side by side and never merged.
        {{#otherMetrics}}<a href="?metric={{value}}{{#at}}&amp;at={{at}}{{/at}}&amp;{{rangeQuery}}">Show {{label}}</a> {{/otherMetrics}}{{#chain}} · <a href="/types/{{typeIdentifier}}?{{rangeQuery}}">all chains</a>{{/chain}}</p>
        <nav class="ranges" aria-label="Time range">Showing {{rangeWords}} (each device's own local days):
        {{#ranges}}{{#current}}<strong aria-current="page">{{label}}</strong>{{/current}}{{^current}}<a href="?{{query}}">{{label}}</a>{{/current}} {{/ranges}}</nav>
        <form method="get" class="inline-form" aria-label="Custom range">
        <input type="hidden" name="metric" value="{{metricValue}}">{{#at}}<input type="hidden" name="at" value="{{at}}">{{/at}}
        <label>From <input type="date" name="from" value="{{from}}"></label>
        <label>to <input type="date" name="to" value="{{to}}"></label>
        <button type="submit">Show these days</button>
        </form>
        {{#hasLegend}}<ul class="legend" aria-label="States">{{/hasLegend}}{{#legend}}<li><span class="swatch {{css}}"></span>{{name}}</li>{{/legend}}{{#hasLegend}}</ul>{{/hasLegend}}
        {{#overlapNote}}<p class="muted overlap-note">{{overlapNote}}</p>{{/overlapNote}}
        {{#overlaps}}<p class="alert overlap">{{names}} share {{identicalRecords}} identical record(s) of this type: possibly one source seen by two devices; do not add them up.</p>{{/overlaps}}
        <div class="side-by-side">
        {{#panels}}
        <figure class="panel" data-chain="{{series.chain}}">
        {{{svg}}}{{{compactSVG}}}
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
