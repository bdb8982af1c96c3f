/// One observation: per type what appeared, disappeared and changed, with the classification.
enum ObservationPageTemplate {
    static let template = """
        <h1>Observation #{{observationID}} <span class="muted">{{observedAt}}</span></h1>
        <p><a href="/chains/{{chain}}">Back to the chain</a> · <a href="/chains/{{chain}}/observations/{{observationID}}/visible">What was visible</a>
        {{#previousObservationID}} · <a href="/chains/{{chain}}/diff?from={{previousObservationID}}&amp;to={{observationID}}">Diff with #{{previousObservationID}}</a>{{/previousObservationID}}</p>
        <p>Status: {{status}}.{{#previousObservationID}} Classified against observation #{{previousObservationID}}.{{/previousObservationID}}{{^previousObservationID}} The first observation: nothing to compare with.{{/previousObservationID}}</p>
        {{#manyTypesShifting}}<p class="alert">Four or more types shifted by over 10% at once: likely a sync or restore event, not loss.</p>{{/manyTypesShifting}}
        <div class="table-wrap"><table class="changes">
        <thead><tr><th>Type</th><th>Run</th><th class="num">Appeared</th><th class="num">Disappeared</th><th class="num">Changed</th><th class="num">Visible after</th><th>Classification</th><th>Evidence</th></tr></thead>
        <tbody>
        {{#changes}}<tr><td>{{typeIdentifier}}</td><td>{{runStatus}}</td><td class="num">{{appeared}}</td><td class="num">{{disappeared}}</td><td class="num">{{changed}}</td><td class="num">{{visibleAfter}}</td>
        <td class="labels">{{#labels}}<span class="{{.}}">{{.}}</span>{{/labels}}</td>
        <td>{{evidence}}
        {{#uncertainty}}<br><span class="muted">{{.}}</span>{{/uncertainty}}</td></tr>{{/changes}}
        </tbody></table></div>
        """
}
