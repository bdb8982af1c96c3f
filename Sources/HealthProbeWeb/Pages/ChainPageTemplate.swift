import HealthProbeArchive

/// A chain: its card, the observation timeline (paged), its types now, and a diff form.
enum ChainPageTemplate {
    struct Model {
        let page: Dashboard.ChainPage
        let canShare: Bool
        let shares: [String]
        let people: [String]
        let csrf: String
        /// The types now, as people read them: the statistic that fits each, dates as days.
        let typeLines: [TypeLine]
        /// What an export is and is not (export-spec.md 8).
        let provenance = ProvenanceWarning.text
    }
    struct TypeLine { let typeIdentifier: String; let typeName: String; let visibleRecords: String; let earliest: String; let latest: String; let statistic: String }

    /// A type's row: a total for amounts, the highest value for measurements, nothing for categories and events.
    static func line(_ t: Dashboard.TypeRow) -> TypeLine {
        let unit = t.unit.map { " " + $0 } ?? ""
        let statistic: String = switch TypeCatalogue.info(t.typeIdentifier).statistic {
        case .sum: t.valueSum.map { "total " + Chart.number($0) + unit } ?? ""
        case .range, .latest: t.valueMax.map { "highest " + Chart.number($0) + unit } ?? ""
        case .duration, .count: ""
        }
        func day(_ iso: String?) -> String { iso.map { Chart.shortDay(String($0.prefix(10)), year: true) } ?? "" }
        return TypeLine(typeIdentifier: t.typeIdentifier, typeName: t.typeName, visibleRecords: Chart.number(Double(t.visibleRecords)),
                        earliest: day(t.earliestStart), latest: day(t.latestEnd), statistic: statistic)
    }
    static let template = """
        {{#page.card}}
        <h1>{{#device}}{{device}}{{/device}}{{^device}}Chain{{/device}} <span class="hash muted">{{chainShort}}</span></h1>
        {{#glance}}<p class="glance {{state}}"><strong>{{label}}</strong>{{#reason}}: {{reason}}{{/reason}}{{#fix}}. What to do: {{#link}}<a href="{{link}}">{{/link}}{{fix}}{{#link}}</a>{{/link}}.{{/fix}}</p>{{/glance}}
        <dl class="facts card">
        <dt>Chain</dt><dd class="hash">{{chain}}</dd>
        <dt>Person</dt><dd>{{#person}}{{person}}{{/person}}{{^person}}none{{/person}}</dd>
        <dt>Device</dt><dd class="device-state {{deviceState.state}}">{{deviceState.label}}</dd>
        <dt>Last good sync</dt><dd>{{#lastSyncAt}}<time datetime="{{lastSyncAt}}" title="{{lastSyncAt}}">{{lastSyncAgo}}</time>{{/lastSyncAt}}{{^lastSyncAt}}never{{/lastSyncAt}}</dd>
        <dt>Device clock</dt><dd>{{#clockInWords}}<span title="{{clockOffsetSeconds}} s, device minus server">{{clockInWords}}</span>{{/clockInWords}}{{^clockInWords}}unknown{{/clockInWords}}</dd>
        <dt>Bundles</dt><dd>{{bundles}}</dd>
        <dt>Visible records</dt><dd>{{visibleRecords}}</dd>
        </dl>
        {{> device-state-alert}}
        {{#alerts}}<p class="alert {{kind}}">{{message}}{{#link}} · <a href="{{link}}">the records</a>{{/link}}</p>{{/alerts}}
        {{/page.card}}
        <h2>Types now</h2>
        <div class="table-wrap"><table class="reflow">
        <thead><tr><th>Type</th><th class="num">Visible records</th><th>From</th><th>To</th><th class="num">Over the whole history</th></tr></thead>
        <tbody>
        {{#typeLines}}<tr><td data-label="Type"><span><a href="/chains/{{page.card.chain}}/types/{{typeIdentifier}}" title="{{typeIdentifier}}">{{typeName}}</a> · <a href="/types/{{typeIdentifier}}">all chains</a></span></td><td data-label="Visible records" class="num">{{visibleRecords}}</td><td data-label="From">{{earliest}}</td><td data-label="To">{{latest}}</td><td data-label="Whole history" class="num">{{statistic}}</td></tr>{{/typeLines}}
        </tbody></table></div>
        <h2>Observations</h2>
        <p class="muted">Pick two observations to compare them: the earlier as "from", the later as "to". A diff can be downloaded from its page.</p>
        <form method="get" action="/chains/{{page.card.chain}}/diff">
        <div class="table-wrap"><table class="timeline reflow">
        <thead><tr><th>#</th><th>Observed (UTC)</th><th>Status</th><th>Trigger</th><th class="num">Appeared</th><th class="num">Disappeared</th><th class="num">Changed</th><th>Compare</th><th></th></tr></thead>
        <tbody>
        {{#page.timeline}}<tr><td data-label="Observation"><a href="/chains/{{page.card.chain}}/observations/{{observationID}}">#{{observationID}}</a></td><td data-label="Observed (UTC)">{{observedAt}}</td><td data-label="Status">{{status}}</td><td data-label="Trigger">{{trigger}}</td><td data-label="Appeared" class="num">{{appeared}}</td><td data-label="Disappeared" class="num">{{disappeared}}</td><td data-label="Changed" class="num">{{changed}}</td>
        <td data-label="Compare"><label><input type="radio" name="from" value="{{observationID}}" required> from</label> <label><input type="radio" name="to" value="{{observationID}}" required> to</label></td>
        <td><a href="/chains/{{page.card.chain}}/observations/{{observationID}}/visible">what was visible</a></td></tr>{{/page.timeline}}
        </tbody></table></div>
        <p><button type="submit">Compare the two picked</button></p>
        </form>
        {{#page.nextAfter}}<p class="pager"><a href="/chains/{{page.card.chain}}?after={{page.nextAfter}}">Next observations</a></p>{{/page.nextAfter}}
        <h2>Downloads</h2>
        <p>Verifiable exports of this chain (docs/export-format.md), made from what the server received; each file names its manifest hash, and
        <code>hp-node verify-export FILE</code> checks it from the file alone, on any machine. Each record names its type, its unit and the
        device's local day; an automation's export also names the window each push read and how late each record arrived.</p>
        <p class="muted">{{provenance}}</p>
        <form method="get" action="/chains/{{page.card.chain}}/export" class="stack">
        <label><input type="radio" name="kind" value="records" checked> records visible at the observation (JSON)</label>
        <label><input type="radio" name="kind" value="records_csv"> records visible at the observation (CSV for a spreadsheet, zipped with its relationships and manifest; unzip and verify the .csv)</label>
        <label><input type="radio" name="kind" value="summary"> type summaries at the observation (JSON)</label>
        <label>At observation (empty: the latest) <input name="at" inputmode="numeric" pattern="[0-9]*"></label>
        <button type="submit">Download</button>
        </form>
        {{#canShare}}
        <h2>Sharing</h2>
        <p>Shared with: {{#shares}}<span class="share">{{.}}</span> {{/shares}}{{^shares}}nobody{{/shares}}</p>
        <form method="post" action="/chains/{{page.card.chain}}/shares" class="stack">
        <input type="hidden" name="csrf" value="{{csrf}}">
        <label>Person <select name="person">{{#people}}<option>{{.}}</option>{{/people}}</select></label>
        <label><input type="radio" name="action" value="share" checked> share (read-only)</label>
        <label><input type="radio" name="action" value="unshare"> take back</label>
        <button type="submit">Apply</button>
        </form>
        {{/canShare}}
        """
}
