/// What was visible at an observation, paged, filtered by type and by the device's local days.
enum VisiblePageTemplate {
    struct Model {
        let page: Dashboard.VisiblePage
        let nextQuery: String?
        let types: [ObservationPageTemplate.Choice]
        let from: String
        let to: String
    }
    static let template = """
        <h1>What was visible at observation #{{page.observationID}}</h1>
        <p><a href="/chains/{{page.chain}}/observations/{{page.observationID}}">Back to the observation</a></p>
        <form method="get" class="inline-form" aria-label="Filter the records">
        <label>Type <select name="type"><option value="">every type</option>{{#types}}<option value="{{value}}"{{#selected}} selected{{/selected}}>{{label}}</option>{{/types}}</select></label>
        <label>From <input type="date" name="from" value="{{from}}"></label>
        <label>to <input type="date" name="to" value="{{to}}"></label>
        <button type="submit">Show</button>
        </form>
        {{#page.zone}}<p class="muted">Local times are the device's own ({{page.zone}}); hover for UTC.</p>{{/page.zone}}
        <div class="table-wrap"><table class="visible reflow">
        <thead><tr><th>Type</th><th>Start (local)</th><th>Value</th><th>Visible since</th><th>Payload hash</th></tr></thead>
        <tbody>
        {{#page.records}}<tr><td data-label="Type" title="{{typeIdentifier}}">{{typeName}}</td><td data-label="Start" title="{{start}} to {{end}}">{{localStart}}</td><td data-label="Value">{{value}}</td><td data-label="Visible since">#{{visibleSince}}</td><td data-label="Payload hash" class="hash">{{payloadHash}}</td></tr>{{/page.records}}
        </tbody></table></div>
        {{^page.records}}<p>No record matches.</p>{{/page.records}}
        {{#nextQuery}}<p class="pager"><a href="/chains/{{page.chain}}/observations/{{page.observationID}}/visible?{{nextQuery}}">Next records</a></p>{{/nextQuery}}
        """
}
