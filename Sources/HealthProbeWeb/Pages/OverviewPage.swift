/// The household overview: each person's chains side by side.
enum OverviewPage {
    static let template = """
        <h1>Household</h1>
        {{^people}}<p>No chains to show yet. {{#isAdmin}}Enroll a device from <a href="/admin">Admin</a>.{{/isAdmin}}{{^isAdmin}}Ask an admin to share a chain with you, or sync a device.{{/isAdmin}}</p>{{/people}}
        {{#people}}
        <h2>{{person}}</h2>
        <div class="cards">
        {{#chains}}
        <section class="card chain" data-chain="{{chain}}">
        <h3><a href="/chains/{{chain}}">{{#device}}{{device}}{{/device}}{{^device}}device unknown{{/device}}</a> <span class="hash muted">{{chainShort}}</span></h3>
        {{#glance}}<p class="glance {{state}}"><strong>{{label}}</strong>{{#reason}}: {{reason}}{{/reason}}{{#fix}}. What to do: {{#link}}<a href="{{link}}">{{/link}}{{fix}}{{#link}}</a>{{/link}}.{{/fix}}</p>{{/glance}}
        <dl class="facts">
        <dt>Device</dt><dd class="device-state {{deviceState.state}}">{{deviceState.label}}</dd>
        <dt>Last good sync</dt><dd class="last-sync">{{#lastSyncAt}}<time datetime="{{lastSyncAt}}" title="{{lastSyncAt}}">{{lastSyncAgo}}</time>{{/lastSyncAt}}{{^lastSyncAt}}never{{/lastSyncAt}}</dd>
        <dt>Bundles</dt><dd>{{bundles}}</dd>
        <dt>Visible records</dt><dd class="visible-records">{{visibleRecords}} in {{types}} type(s)</dd>
        <dt>Latest observation</dt><dd>{{#latestObservationID}}<a href="/chains/{{chain}}/observations/{{latestObservationID}}">#{{latestObservationID}}</a> {{latestObservedAt}} ({{latestStatus}}){{/latestObservationID}}{{^latestObservationID}}none{{/latestObservationID}}</dd>
        <dt>Verification</dt><dd>{{#verification}}{{#ok}}<span class="ok">passed</span>{{/ok}}{{^ok}}<span class="bad">problems</span>{{/ok}} ({{mode}}, {{checkedAt}}){{/verification}}{{^verification}}<span class="muted">never run</span>{{/verification}}</dd>
        </dl>
        {{> device-state-alert}}
        {{#alerts}}<p class="alert {{kind}}">{{message}}{{#link}} · <a href="{{link}}">the records</a>{{/link}}</p>{{/alerts}}
        </section>
        {{/chains}}
        </div>
        {{/people}}
        """

    struct Model { let people: [Dashboard.PersonChains]; let isAdmin: Bool }
}
