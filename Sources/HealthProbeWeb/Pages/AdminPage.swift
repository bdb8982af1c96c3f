import Foundation
import HealthProbeArchive
import HealthProbeServer

/// Administration: people, devices, one-time enrollment tokens, revocation, verification.
enum AdminPage {
    struct DeviceRow {
        let name: String
        let state: String
        /// What to do about the device, its commands (between backticks in the text) shown as code.
        let advice: [AdvicePart]
        let person: String?
        let chains: [String]
        let revocable: Bool
    }
    /// A piece of a device's advice: text, or a command to type.
    struct AdvicePart { let text: String; let code: Bool }

    /// `advice` cut at its backticks: every other piece is a command.
    static func adviceParts(_ advice: String?) -> [AdvicePart] {
        guard let advice else { return [] }
        return advice.split(separator: "`", omittingEmptySubsequences: false).enumerated().compactMap { i, piece in
            piece.isEmpty ? nil : AdvicePart(text: String(piece), code: i % 2 == 1)
        }
    }
    struct ChainRow { let chain: String; let chainShort: String; let verification: Dashboard.Verification?; let storage: String?; let compactable: Bool }
    /// A role option, selected when it is the person's role.
    struct RoleOption { let value: String; let selected: Bool }
    struct PersonRow {
        let name: String
        let person: People.Person
        let roles: [RoleOption]
    }
    struct Model {
        let csrf: String
        let people: [PersonRow]
        let devices: [DeviceRow]
        let chains: [ChainRow]
        let roles: [String]
        let personNames: [String]
        let token: String?
        let enrollCommand: String?
        let notice: String?
        let audit: [AuditRow]
    }
    /// One line of the audit log, as the page shows it.
    struct AuditRow { let at: String; let actor: String; let via: String; let action: String; let target: String; let detail: String }
    /// "404.0 MB, 12 free pages" for a replica's file.
    static func storageText(_ s: ArchiveCompaction.Storage) -> String {
        String(format: "%.1f MB, %d free page%@", Double(s.bytes) / 1_000_000, s.freePages, s.freePages == 1 ? "" : "s")
    }

    static let template = """
        <h1>Admin</h1>
        {{#notice}}<p class="alert" role="status">{{notice}}</p>{{/notice}}
        {{#token}}
        <h2>Enrollment token</h2>
        <p>Valid once, for 24 hours. On the device, run:</p>
        <code class="token" id="enroll-command">{{enrollCommand}}</code>
        {{/token}}
        <h2>People</h2>
        <div class="table-wrap"><table class="people reflow">
        <thead><tr><th>Name</th><th>Role</th><th>Devices</th><th>Password</th><th>Change</th></tr></thead>
        <tbody>{{#people}}<tr data-person="{{name}}"><td data-label="Name"><strong>{{name}}</strong></td><td data-label="Role">{{person.role}}</td><td data-label="Devices">{{#person.devices}}{{.}} {{/person.devices}}</td><td data-label="Password">{{#person.hasPassword}}set{{/person.hasPassword}}{{^person.hasPassword}}<span class="muted">not set</span>{{/person.hasPassword}}</td>
        <td>
        <form method="post" action="/admin/people/{{name}}/role" class="inline"><input type="hidden" name="csrf" value="{{csrf}}"><select name="role" aria-label="role of {{name}}">{{#roles}}<option value="{{value}}"{{#selected}} selected{{/selected}}>{{value}}</option>{{/roles}}</select> <button type="submit">Set role</button></form>
        <form method="post" action="/admin/people/{{name}}/password" class="inline"><input type="hidden" name="csrf" value="{{csrf}}"><input name="password" type="password" autocomplete="new-password" required minlength="12" maxlength="256" aria-label="new password for {{name}}"> <button type="submit">Set password</button></form>
        <form method="post" action="/admin/people/{{name}}/remove" class="inline"><input type="hidden" name="csrf" value="{{csrf}}"><button type="submit">Remove…</button></form>
        </td></tr>{{/people}}</tbody>
        </table></div>
        <form method="post" action="/admin/people" class="stack">
        <input type="hidden" name="csrf" value="{{csrf}}">
        <label>Name <input name="name" required maxlength="64"></label>
        <label>Role <select name="role" required><option value="" selected disabled>Choose a role</option>{{#roles}}<option value="{{.}}">{{.}}</option>{{/roles}}</select></label>
        <label>Password (12 or more characters) <input name="password" type="password" autocomplete="new-password" required minlength="12" maxlength="256"></label>
        <button type="submit">Add person</button>
        </form>
        <h2>Devices</h2>
        <div class="table-wrap"><table class="devices reflow">
        <thead><tr><th>Device</th><th>State</th><th>Person</th><th>Chains</th><th></th></tr></thead>
        <tbody>{{#devices}}<tr><td data-label="Device"><strong>{{name}}</strong></td><td data-label="State"><span class="with-advice">{{state}}<small class="advice">{{#advice}}{{#code}}<code>{{text}}</code>{{/code}}{{^code}}{{text}}{{/code}}{{/advice}}</small></span></td><td data-label="Person">{{person}}</td><td data-label="Chains"><span class="hash">{{#chains}}{{.}} {{/chains}}{{^chains}}none{{/chains}}</span></td>
        <td>{{#revocable}}<form method="post" action="/admin/devices/{{name}}/revoke" class="inline"><input type="hidden" name="csrf" value="{{csrf}}"><button type="submit">Revoke…</button></form>{{/revocable}}</td></tr>{{/devices}}</tbody>
        </table></div>
        <h2>Enroll a device</h2>
        <form method="post" action="/admin/tokens" class="stack">
        <input type="hidden" name="csrf" value="{{csrf}}">
        <label>Device name <input name="device" required maxlength="64"></label>
        <label>Whose device <select name="person" required><option value="" selected disabled>Choose a person</option>{{#personNames}}<option value="{{.}}">{{.}}</option>{{/personNames}}</select></label>
        <button type="submit">Issue a one-time token</button>
        </form>
        <h2>Verification</h2>
        <div class="table-wrap"><table class="verification reflow">
        <thead><tr><th>Chain</th><th>Last result</th><th>Replica file</th></tr></thead>
        <tbody>{{#chains}}<tr><td data-label="Chain" class="hash"><a href="/chains/{{chain}}">{{chainShort}}</a></td><td data-label="Last result">{{#verification}}{{#ok}}<span class="ok">passed</span>{{/ok}}{{^ok}}<span class="bad">problems</span>: {{#problems}}{{.}}; {{/problems}}{{/ok}} ({{mode}}, {{checkedAt}}){{/verification}}{{^verification}}<span class="muted">never run</span>{{/verification}}</td><td data-label="Replica file">{{#storage}}{{storage}}{{/storage}}{{^storage}}<span class="muted">unreadable</span>{{/storage}}{{#compactable}} <span class="compact-hint">(worth compacting: stop the server and run <code>hp-server compact</code>)</span>{{/compactable}}</td></tr>{{/chains}}</tbody>
        </table></div>
        <form method="post" action="/admin/verify" class="stack">
        <input type="hidden" name="csrf" value="{{csrf}}">
        <label><input type="radio" name="mode" value="quick" checked> quick (latest bundle, replica checks)</label>
        <label><input type="radio" name="mode" value="full"> full (every stored bundle)</label>
        <button type="submit">Run verify on every chain</button>
        </form>
        <h2>Recent admin and sharing actions</h2>
        <p class="muted">The newest 20; all of them with <code>hp-server audit</code> or <code>/api/v1/admin/audit</code>.</p>
        <div class="table-wrap"><table class="audit reflow">
        <thead><tr><th>When (UTC)</th><th>Who</th><th>What</th><th>On</th><th>Detail</th></tr></thead>
        <tbody>{{#audit}}<tr><td data-label="When (UTC)">{{at}}</td><td data-label="Who">{{actor}} <span class="muted">({{via}})</span></td><td data-label="What">{{action}}</td><td data-label="On">{{target}}</td><td data-label="Detail">{{detail}}</td></tr>{{/audit}}
        {{^audit}}<tr><td colspan="5" class="muted">nothing yet</td></tr>{{/audit}}</tbody>
        </table></div>
        """
}

/// "Are you sure?" before a change that is hard to undo: the same form, with `confirm=yes`.
enum ConfirmPage {
    struct Field { let name: String; let value: String }
    struct Model { let heading: String; let message: String; let action: String; let csrf: String; let fields: [Field]; let button: String }
    static let template = """
        <h1>{{heading}}</h1>
        <p>{{message}}</p>
        <form method="post" action="{{action}}" class="stack">
        <input type="hidden" name="csrf" value="{{csrf}}">
        {{#fields}}<input type="hidden" name="{{name}}" value="{{value}}">{{/fields}}
        <input type="hidden" name="confirm" value="yes">
        <button type="submit" class="danger">{{button}}</button>
        </form>
        <p><a href="/admin">Cancel</a></p>
        """
}
