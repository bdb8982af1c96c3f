import Foundation
import HealthProbeServer

/// A person's alerts (on the chains they may read) with Acknowledge and Snooze, their
/// channels (add, test, remove) and their quiet hours. Forms only, no script.
enum AlertsPage {
    struct AlertRow {
        let chain: String
        /// The device's chain page, or the admin page for the server.
        let link: String
        let device: String
        let owner: String
        let condition: String
        let words: String
        let state: String
        let firing: Bool
        /// How long ago it fired (or resolved), and the exact local time with its zone.
        let since: String
        let sinceExact: String
        let sinceISO: String
        /// The firing shown, sent back with Acknowledge.
        let firedAt: String
        let detail: String
        let acknowledgedBy: String?
        let snoozedUntil: String?
    }
    struct ChannelRow { let id: Int64; let kind: String; let target: String; let secretHint: String?; let added: String }
    struct Model {
        let csrf: String
        let notice: String?
        let alerts: [AlertRow]
        let channels: [ChannelRow]
        let quiet: String?
        let quietFrom: String
        let quietTo: String
        /// The zone of the quiet hours (UTC until set) and the zones offered.
        let quietZone: String
        let zones: [String]
        /// The zone the page's times are shown in: the quiet hours' zone, else UTC.
        let shownZone: String
    }

    static let template = """
        <h1>Alerts</h1>
        {{#notice}}<p class="alert" role="status">{{notice}}</p>{{/notice}}
        <p class="muted">About the devices whose history you may read. Messages hold no health values. Times are in {{shownZone}} (the zone of your quiet hours).</p>
        <div class="table-wrap"><table class="alerts reflow">
        <thead><tr><th>Device</th><th>Condition</th><th>State</th><th>Since</th><th>Detail</th><th></th></tr></thead>
        <tbody>{{#alerts}}<tr data-alert="{{condition}}" data-chain="{{chain}}" class="{{state}}"><td data-label="Device"><a href="{{link}}"><strong>{{device}}</strong></a> <span class="muted">({{owner}})</span></td>
        <td data-label="Condition">{{words}}</td>
        <td data-label="State">{{state}}{{#acknowledgedBy}}, acknowledged by {{.}}{{/acknowledgedBy}}{{#snoozedUntil}}, snoozed until {{.}}{{/snoozedUntil}}</td>
        <td data-label="Since"><span><time datetime="{{sinceISO}}" title="{{sinceExact}}">{{since}}</time><span class="muted"> ({{sinceExact}})</span></span></td><td data-label="Detail">{{detail}}</td>
        <td>{{#firing}}<form method="post" action="/alerts/{{chain}}/{{condition}}/ack" class="inline"><input type="hidden" name="csrf" value="{{csrf}}"><input type="hidden" name="fired_at" value="{{firedAt}}"><button type="submit">Acknowledge</button></form>
        <form method="post" action="/alerts/{{chain}}/{{condition}}/snooze" class="inline"><input type="hidden" name="csrf" value="{{csrf}}"><select name="hours" aria-label="snooze {{words}} on {{device}} for"><option value="1">1 hour</option><option value="8">8 hours</option><option value="24" selected>1 day</option><option value="168">1 week</option></select> <button type="submit">Snooze</button></form>{{/firing}}</td></tr>{{/alerts}}
        {{^alerts}}<tr><td colspan="6" class="muted">No alerts.</td></tr>{{/alerts}}</tbody>
        </table></div>
        <h2>Your channels</h2>
        <div class="table-wrap"><table class="channels reflow">
        <thead><tr><th>Kind</th><th>Where</th><th>Secret</th><th>Added</th><th></th></tr></thead>
        <tbody>{{#channels}}<tr data-channel="{{id}}"><td data-label="Kind">{{kind}}</td><td data-label="Where" class="target">{{target}}</td><td data-label="Secret">{{#secretHint}}{{.}}{{/secretHint}}{{^secretHint}}-{{/secretHint}}</td><td data-label="Added">{{added}}</td>
        <td><form method="post" action="/alerts/channels/{{id}}/test" class="inline"><input type="hidden" name="csrf" value="{{csrf}}"><button type="submit">Send a test</button></form>
        <form method="post" action="/alerts/channels/{{id}}/remove" class="inline"><input type="hidden" name="csrf" value="{{csrf}}"><button type="submit">Remove</button></form></td></tr>{{/channels}}
        {{^channels}}<tr><td colspan="5" class="muted">No channels: you are not told of alerts until you add one.</td></tr>{{/channels}}</tbody>
        </table></div>
        <form method="post" action="/alerts/channels" class="stack">
        <input type="hidden" name="csrf" value="{{csrf}}">
        <label>Kind <select name="kind" required><option value="email" selected>email</option><option value="webhook">webhook (signed JSON)</option><option value="ntfy">ntfy topic</option></select></label>
        <label>Address or URL <input name="target" required maxlength="2048" autocomplete="off"></label>
        <label>Webhook secret (16 or more characters; left empty, one is made) <input name="secret" maxlength="256" autocomplete="off"></label>
        <button type="submit">Add channel</button>
        </form>
        <h2>Quiet hours</h2>
        <p>{{#quiet}}Messages wait from {{quiet}}.{{/quiet}}{{^quiet}}None: messages go out at once.{{/quiet}}</p>
        <form method="post" action="/alerts/quiet" class="stack">
        <input type="hidden" name="csrf" value="{{csrf}}">
        <label>From <input name="from" type="time" value="{{quietFrom}}" required></label>
        <label>To <input name="to" type="time" value="{{quietTo}}" required></label>
        <label>Time zone (IANA, like Europe/Berlin; daylight saving time is followed) <input name="zone" value="{{quietZone}}" list="zones" required maxlength="64" autocomplete="off" spellcheck="false"></label>
        <datalist id="zones">{{#zones}}<option value="{{.}}">{{/zones}}</datalist>
        <button type="submit">Set quiet hours</button>
        </form>
        {{#quiet}}<form method="post" action="/alerts/quiet" class="inline"><input type="hidden" name="csrf" value="{{csrf}}"><input type="hidden" name="clear" value="yes"><button type="submit">No quiet hours</button></form>{{/quiet}}
        """
}
