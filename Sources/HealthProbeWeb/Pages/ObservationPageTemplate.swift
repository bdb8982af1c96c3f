/// One observation: per type what appeared, disappeared and changed, with the classification.
enum ObservationPageTemplate {
    struct Model {
        let page: Dashboard.ObservationPage
        let disappeared: Dashboard.DisappearedPage
        /// The types that lost records here, for the filter (the chosen one marked).
        let typeChoices: [Choice]
        /// The query of the next page of disappeared records.
        let nextQuery: String?
        /// Whether any record disappeared here (templates read stored properties only).
        let anyDisappeared: Bool
        /// Whether some type's records arrived late here.
        let anyLate: Bool
        init(page: Dashboard.ObservationPage, disappeared: Dashboard.DisappearedPage, typeChoices: [Choice], nextQuery: String?) {
            self.page = page
            self.disappeared = disappeared
            self.typeChoices = typeChoices
            self.nextQuery = nextQuery
            anyDisappeared = !typeChoices.isEmpty
            anyLate = !page.lateTypes.isEmpty
        }
    }
    struct Choice { let value: String; let label: String; let selected: Bool }
    static let template = """
        {{#page}}
        <h1>Observation #{{observationID}} <span class="muted">{{observedAt}}</span></h1>
        <p><a href="/chains/{{chain}}">Back to the chain</a> · <a href="/chains/{{chain}}/observations/{{observationID}}/visible">What was visible</a>
        {{#previousObservationID}} · <a href="/chains/{{chain}}/diff?from={{previousObservationID}}&amp;to={{observationID}}">Diff with #{{previousObservationID}}</a>{{/previousObservationID}}</p>
        <p>Status: {{status}}.{{#previousObservationID}} Classified against observation #{{previousObservationID}}.{{/previousObservationID}}{{^previousObservationID}} The first observation: nothing to compare with.{{/previousObservationID}}</p>
        {{#captureWindow}}<p class="capture-window">{{captureWindow}}</p>{{/captureWindow}}
        {{#anyLate}}<p class="late">Arrived late (late, not lost):{{#lateTypes}} {{typeName}} {{words}}.{{/lateTypes}}</p>{{/anyLate}}
        {{#hasLoss}}<p class="alert loss" role="alert">Loss found: records disappeared with nothing of their own source in their place, in {{lossTypeNames}}. <a href="#disappeared">See the records</a>.</p>{{/hasLoss}}
        {{#manyTypesShifting}}<p class="alert">Four or more types shifted by over 10% at once, as a sync or restore does.{{#hasLoss}} That does not explain the loss above.{{/hasLoss}}{{^hasLoss}} No type lost records.{{/hasLoss}}</p>{{/manyTypesShifting}}
        <div class="table-wrap"><table class="changes reflow">
        <thead><tr><th>Type</th><th>Run</th><th class="num">Appeared</th><th class="num">Disappeared</th><th class="num">Changed</th><th class="num">Visible after</th><th>Verdict</th><th>Why</th></tr></thead>
        <tbody>
        {{#changes}}<tr><td data-label="Type" title="{{typeIdentifier}}"><strong>{{typeName}}</strong></td><td data-label="Run">{{runStatus}}</td><td data-label="Appeared" class="num">{{appeared}}</td><td data-label="Disappeared" class="num">{{disappeared}}</td><td data-label="Changed" class="num">{{changed}}</td><td data-label="Visible after" class="num">{{visibleAfter}}</td>
        <td data-label="Verdict" class="verdict"><span class="{{verdict}}">{{verdict}}</span></td>
        <td data-label="Why"><span>{{#reasons}}{{.}}<br>{{/reasons}}
        {{#uncertainty}}<span class="muted">{{.}}</span><br>{{/uncertainty}}
        <span class="muted labels">{{evidence}} {{#labels}}<span class="label">{{.}}</span> {{/labels}}</span></span></td></tr>{{/changes}}
        </tbody></table></div>
        {{/page}}
        {{#anyDisappeared}}
        {{#disappeared}}
        <h2 id="disappeared">Records that disappeared here</h2>
        <p class="muted">Each as it last looked when it was visible. Times are the device's own ({{zone}}).</p>
        <form method="get" action="#disappeared" class="inline-form" aria-label="Filter the records">
        <label>Type <select name="type"><option value="">every type</option>{{/disappeared}}{{#typeChoices}}<option value="{{value}}"{{#selected}} selected{{/selected}}>{{label}}</option>{{/typeChoices}}{{#disappeared}}</select></label>
        <button type="submit">Show</button>
        </form>
        <div class="table-wrap"><table class="reflow">
        <thead><tr><th>Type</th><th>When (local)</th><th>Value</th><th>Written by</th><th>Why it counts as gone</th></tr></thead>
        <tbody>
        {{#records}}<tr><td data-label="Type">{{typeName}}</td><td data-label="When" title="{{start}}">{{localTime}}</td><td data-label="Value">{{value}}</td><td data-label="Written by">{{source}}{{^source}}<span class="muted">not recorded</span>{{/source}}</td><td data-label="Why">{{why}}</td></tr>{{/records}}
        </tbody></table></div>
        {{^records}}<p>No records of this type disappeared here.</p>{{/records}}
        {{/disappeared}}
        {{#nextQuery}}<p><a href="?{{nextQuery}}#disappeared">More records</a></p>{{/nextQuery}}
        {{/anyDisappeared}}
        """
}
