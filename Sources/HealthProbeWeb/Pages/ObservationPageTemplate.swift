/// One observation: per type what appeared, disappeared and changed, with the classification.
enum ObservationPageTemplate {
    static let template = """
        <h1>Observation #{{observationID}} <span class="muted">{{observedAt}}</span></h1>
        <p><a href="/chains/{{chain}}">Back to the chain</a> · <a href="/chains/{{chain}}/observations/{{observationID}}/visible">What was visible</a>
        {{#previousObservationID}} · <a href="/chains/{{chain}}/diff?from={{previousObservationID}}&amp;to={{observationID}}">Diff with #{{previousObservationID}}</a>{{/previousObservationID}}</p>
        <p>Status: {{status}}.{{#previousObservationID}} Classified against observation #{{previousObservationID}}.{{/previousObservationID}}{{^previousObservationID}} The first observation: nothing to compare with.{{/previousObservationID}}</p>
        {{#hasLoss}}<p class="alert loss" role="alert">Loss found: records disappeared with nothing of their own source in their place, in {{lossTypeNames}}.</p>{{/hasLoss}}
        {{#manyTypesShifting}}<p class="alert">Four or more types shifted by over 10% at once, as a sync or restore does.{{#hasLoss}} That does not explain the loss above.{{/hasLoss}}{{^hasLoss}} No type lost records.{{/hasLoss}}</p>{{/manyTypesShifting}}
        <div class="table-wrap"><table class="changes">
        <thead><tr><th>Type</th><th>Run</th><th class="num">Appeared</th><th class="num">Disappeared</th><th class="num">Changed</th><th class="num">Visible after</th><th>Verdict</th><th>Why</th></tr></thead>
        <tbody>
        {{#changes}}<tr><td title="{{typeIdentifier}}">{{typeName}}</td><td>{{runStatus}}</td><td class="num">{{appeared}}</td><td class="num">{{disappeared}}</td><td class="num">{{changed}}</td><td class="num">{{visibleAfter}}</td>
        <td class="verdict"><span class="{{verdict}}">{{verdict}}</span></td>
        <td>{{#reasons}}{{.}}<br>{{/reasons}}
        {{#uncertainty}}<span class="muted">{{.}}</span><br>{{/uncertainty}}
        <span class="muted labels">{{evidence}} {{#labels}}<span class="label">{{.}}</span> {{/labels}}</span></td></tr>{{/changes}}
        </tbody></table></div>
        """
}
