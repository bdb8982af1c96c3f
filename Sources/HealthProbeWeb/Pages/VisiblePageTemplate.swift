/// What was visible at an observation, paged.
enum VisiblePageTemplate {
    struct Model { let page: Dashboard.VisiblePage; let nextQuery: String? }
    static let template = """
        <h1>Visible at observation #{{page.observationID}}{{#page.typeIdentifier}} · {{page.typeIdentifier}}{{/page.typeIdentifier}}</h1>
        <p><a href="/chains/{{page.chain}}/observations/{{page.observationID}}">Back to the observation</a></p>
        <div class="table-wrap"><table class="visible">
        <thead><tr><th>Type</th><th>Start (UTC)</th><th>End (UTC)</th><th>Value</th><th>Visible since</th><th>Payload hash</th></tr></thead>
        <tbody>
        {{#page.records}}<tr><td>{{typeIdentifier}}</td><td>{{start}}</td><td>{{end}}</td><td>{{value}}</td><td>#{{visibleSince}}</td><td class="hash">{{payloadHash}}</td></tr>{{/page.records}}
        </tbody></table></div>
        {{^page.records}}<p>Nothing was visible.</p>{{/page.records}}
        {{#nextQuery}}<p class="pager"><a href="/chains/{{page.chain}}/observations/{{page.observationID}}/visible?{{nextQuery}}">Next records</a></p>{{/nextQuery}}
        """
}
