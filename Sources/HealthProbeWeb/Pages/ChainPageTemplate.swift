/// A chain: its card, the observation timeline (paged), its types now, and a diff form.
enum ChainPageTemplate {
    struct Model { let page: Dashboard.ChainPage; let canShare: Bool; let shares: [String]; let people: [String]; let csrf: String }
    static let template = """
        {{#page.card}}
        <h1>{{#device}}{{device}}{{/device}}{{^device}}Chain{{/device}} <span class="hash muted">{{chainShort}}</span></h1>
        <dl class="facts card">
        <dt>Chain</dt><dd class="hash">{{chain}}</dd>
        <dt>Person</dt><dd>{{#person}}{{person}}{{/person}}{{^person}}none{{/person}}</dd>
        <dt>Device</dt><dd class="device-state {{deviceState.state}}">{{deviceState.label}}</dd>
        <dt>Last good sync</dt><dd>{{#lastSyncAt}}{{lastSyncAt}}{{/lastSyncAt}}{{^lastSyncAt}}never{{/lastSyncAt}}</dd>
        <dt>Clock offset</dt><dd>{{#clockOffsetSeconds}}{{clockOffsetSeconds}} s (device minus server){{/clockOffsetSeconds}}{{^clockOffsetSeconds}}unknown{{/clockOffsetSeconds}}</dd>
        <dt>Bundles</dt><dd>{{bundles}}</dd>
        <dt>Visible records</dt><dd>{{visibleRecords}}</dd>
        </dl>
        {{> device-state-alert}}
        {{#alerts}}<p class="alert {{kind}}">{{message}}</p>{{/alerts}}
        {{/page.card}}
        <h2>Types now</h2>
        <div class="table-wrap"><table>
        <thead><tr><th>Type</th><th class="num">Visible</th><th>Earliest</th><th>Latest</th><th class="num">Sum</th></tr></thead>
        <tbody>
        {{#page.types}}<tr><td><a href="/chains/{{page.card.chain}}/types/{{typeIdentifier}}" title="{{typeIdentifier}}">{{typeName}}</a> · <a href="/types/{{typeIdentifier}}">all chains</a></td><td class="num">{{visibleRecords}}</td><td>{{earliestStart}}</td><td>{{latestEnd}}</td><td class="num">{{valueSum}}{{#unit}} {{unit}}{{/unit}}</td></tr>{{/page.types}}
        </tbody></table></div>
        <h2>Observations</h2>
        <div class="table-wrap"><table class="timeline">
        <thead><tr><th>#</th><th>Observed (UTC)</th><th>Status</th><th>Trigger</th><th class="num">Appeared</th><th class="num">Disappeared</th><th class="num">Changed</th><th></th></tr></thead>
        <tbody>
        {{#page.timeline}}<tr><td><a href="/chains/{{page.card.chain}}/observations/{{observationID}}">{{observationID}}</a></td><td>{{observedAt}}</td><td>{{status}}</td><td>{{trigger}}</td><td class="num">{{appeared}}</td><td class="num">{{disappeared}}</td><td class="num">{{changed}}</td><td><a href="/chains/{{page.card.chain}}/observations/{{observationID}}/visible">visible</a></td></tr>{{/page.timeline}}
        </tbody></table></div>
        {{#page.nextAfter}}<p class="pager"><a href="/chains/{{page.card.chain}}?after={{page.nextAfter}}">Next observations</a></p>{{/page.nextAfter}}
        <h2>Compare two observations</h2>
        <form method="get" action="/chains/{{page.card.chain}}/diff" class="stack">
        <label>From observation <input name="from" inputmode="numeric" pattern="[0-9]+" required></label>
        <label>To observation <input name="to" inputmode="numeric" pattern="[0-9]+" required></label>
        <button type="submit">Show the diff</button>
        </form>
        <h2>Downloads</h2>
        <p>Verifiable exports of this chain (docs/export-format.md), made from what the server received; each file names its manifest hash, and
        <code>hp-node verify-export FILE</code> checks it from the file alone, on any machine.</p>
        <form method="get" action="/chains/{{page.card.chain}}/export" class="stack">
        <label><input type="radio" name="kind" value="records" checked> records visible at the observation (JSON)</label>
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
