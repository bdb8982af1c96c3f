import Foundation
import HTTPTypes
import Hummingbird
import Mustache

/// What every page shows around its content: who is signed in, the navigation, the CSRF token.
struct Chrome: Sendable {
    var title: String
    var signedInAs: String?
    var role: String?
    var isAdmin: Bool
    var csrf: String?
}

/// The page templates (swift-mustache), compiled once; `{{ }}` escapes HTML.
struct Pages: Sendable {
    let library: MustacheLibrary

    init() throws {
        var library = MustacheLibrary()
        let templates: [(String, String)] = [
            ("layout", Self.layout), ("login", LoginPage.template), ("overview", OverviewPage.template),
            ("chain", ChainPageTemplate.template), ("observation", ObservationPageTemplate.template),
            ("visible", VisiblePageTemplate.template), ("type", TypePageTemplate.template), ("diff", DiffPageTemplate.template),
            ("admin", AdminPage.template), ("message", MessagePage.template), ("confirm", ConfirmPage.template), ("alerts", AlertsPage.template),
            ("device-state-alert", Self.deviceStateAlert),
        ]
        for (name, text) in templates { try library.register(text, named: name) }
        self.library = library
    }

    /// Renders `name` with `model` inside the layout.
    func render(_ name: String, _ model: Any, chrome: Chrome, status: HTTPResponse.Status = .ok) -> Response {
        let body = library.render(RenderTree.of(model), withTemplate: name) ?? ""
        struct Frame { let chrome: Chrome; let body: String }
        let html = library.render(RenderTree.of(Frame(chrome: chrome, body: body)), withTemplate: "layout") ?? ""
        var headers = HTTPFields()
        headers[.contentType] = "text/html; charset=utf-8"
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(string: html)))
    }

    /// A card's device state when someone should act: the reason and what to do (overview and chain page).
    static let deviceStateAlert = """
        {{#deviceState.needsAction}}<p class="alert device {{deviceState.state}}">{{deviceState.reason}}. What to do: {{deviceState.fix}}.</p>{{/deviceState.needsAction}}
        """

    static let layout = """
        <!doctype html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <title>{{chrome.title}} · HealthProbe</title>
        <link rel="stylesheet" href="/static/site.css">
        </head>
        <body>
        <header>
        <a class="brand" href="/">HealthProbe</a>
        {{#chrome.signedInAs}}
        <nav>
        <a href="/">Overview</a>
        <a href="/alerts">Alerts</a>
        {{#chrome.isAdmin}}<a href="/admin">Admin</a>{{/chrome.isAdmin}}
        <span class="who">{{chrome.signedInAs}} ({{chrome.role}})</span>
        <form method="post" action="/logout" class="inline"><input type="hidden" name="csrf" value="{{chrome.csrf}}"><button type="submit">Sign out</button></form>
        </nav>
        {{/chrome.signedInAs}}
        </header>
        <main>
        {{{body}}}
        </main>
        <footer>Health records as each device saw them: what was visible, when it changed, with proof. Synthetic data only on demo servers.</footer>
        </body>
        </html>
        """

    /// The stylesheet: served from `/static/site.css` (the CSP allows no inline styles).
    static let css = """
        :root { --fg: #1d2330; --muted: #5b6475; --line: #d9dde5; --accent: #2a5bd7; --warn: #a15c00; --bad: #b3261e; --ok: #1e7a3c; }
        * { box-sizing: border-box; }
        body { margin: 0; font: 16px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--fg); background: #f7f8fa; }
        header { display: flex; flex-wrap: wrap; gap: .75rem; align-items: center; justify-content: space-between; padding: .6rem 1rem; background: #fff; border-bottom: 1px solid var(--line); }
        header nav { display: flex; flex-wrap: wrap; gap: .75rem; align-items: center; }
        .brand { font-weight: 700; color: var(--fg); text-decoration: none; }
        main { max-width: 72rem; margin: 0 auto; padding: 1rem; }
        footer { color: var(--muted); font-size: .8rem; padding: 1rem; text-align: center; }
        a { color: var(--accent); }
        h1 { font-size: 1.4rem; margin: .2rem 0 1rem; } h2 { font-size: 1.15rem; margin: 1.4rem 0 .6rem; }
        .cards { display: grid; grid-template-columns: repeat(auto-fill, minmax(17rem, 1fr)); gap: .8rem; }
        .card { background: #fff; border: 1px solid var(--line); border-radius: .5rem; padding: .8rem; }
        .card h3 { margin: 0 0 .4rem; font-size: 1rem; }
        dl.facts { display: grid; grid-template-columns: auto 1fr; gap: .15rem .6rem; margin: 0; font-size: .9rem; }
        dl.facts dt { color: var(--muted); } dl.facts dd { margin: 0; overflow-wrap: anywhere; }
        .alert { margin: .4rem 0 0; padding: .3rem .5rem; border-left: 3px solid var(--warn); background: #fff6e8; font-size: .85rem; }
        .alert.verification_problem, .alert.refused_bundles, .alert.loss { border-color: var(--bad); background: #fdecea; }
        .alert.replaced_device { border-color: var(--line); background: #f4f5f8; }
        .glance { margin: 0 0 .5rem; padding: .35rem .5rem; border-radius: .3rem; font-size: .9rem; }
        .glance.up_to_date { background: #e9f6ee; color: var(--ok); } .glance.needs_attention { background: #fff6e8; }
        .glance.loss_found { background: #fdecea; color: var(--bad); }
        .ok { color: var(--ok); } .bad { color: var(--bad); } .muted { color: var(--muted); }
        .table-wrap { overflow-x: auto; }
        table { border-collapse: collapse; width: 100%; background: #fff; font-size: .9rem; }
        th, td { text-align: left; padding: .35rem .5rem; border-bottom: 1px solid var(--line); vertical-align: top; }
        td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
        code, .hash { font-family: ui-monospace, monospace; font-size: .85em; overflow-wrap: anywhere; }
        small.advice { display: block; color: var(--muted); } small.advice:empty { display: none; }
        form.inline { display: inline; }
        form.stack { display: grid; gap: .5rem; max-width: 24rem; }
        input, select, button { font: inherit; padding: .35rem .5rem; }
        button { cursor: pointer; }
        button.danger { background: #8b1a1a; color: #fff; border: 1px solid #8b1a1a; }
        .chart { width: 100%; height: auto; background: #fff; border: 1px solid var(--line); border-radius: .4rem; }
        .chart .bar { fill: var(--accent); } .chart .span { fill: none; stroke: var(--muted); stroke-dasharray: 3 2; }
        .chart .state-0, .swatch.state-0 { fill: #1d3f8f; background: #1d3f8f; } .chart .state-1, .swatch.state-1 { fill: #4a86d8; background: #4a86d8; }
        .chart .state-2, .swatch.state-2 { fill: #8d6bd6; background: #8d6bd6; } .chart .state-3, .swatch.state-3 { fill: #62b3c9; background: #62b3c9; }
        .chart .state-4, .swatch.state-4 { fill: #e99a2c; background: #e99a2c; } .chart .state-5, .swatch.state-5 { fill: #9a9a9a; background: #9a9a9a; }
        ul.legend { list-style: none; padding: 0; display: flex; flex-wrap: wrap; gap: .3rem 1rem; margin: .3rem 0; }
        .swatch { display: inline-block; width: .9em; height: .9em; border-radius: .15em; vertical-align: -.1em; margin-right: .3em; }
        .swatch.span { border: 1px dashed var(--muted); background: none; } .chart .axis { stroke: var(--muted); } .chart .tick { font-size: 11px; fill: var(--muted); } .chart .grid { stroke: var(--line); stroke-dasharray: 2 3; }
        .ranges { margin: .4rem 0; } .ranges a, .ranges strong { margin-right: .5rem; }
        .inline-form { display: flex; flex-wrap: wrap; gap: .5rem; align-items: end; margin: .4rem 0 1rem; }
        .side-by-side { display: grid; grid-template-columns: repeat(auto-fit, minmax(20rem, 1fr)); gap: 1rem; }
        .labels span { display: inline-block; margin: 0 .25rem .25rem 0; padding: 0 .35rem; border-radius: .25rem; background: #e8edf8; font-size: .8rem; }
        .labels span.loss { background: #fdecea; color: var(--bad); }
        td.verdict span { font-weight: 600; }
        td.verdict span.loss { color: var(--bad); }
        td.verdict span.uncertain, td.verdict span.unavailable { color: #8a5a00; }
        .token { display: block; padding: .5rem; background: #fff; border: 1px solid var(--line); overflow-wrap: anywhere; }
        .pager { margin: .6rem 0; }
        figure.panel { margin: 0; } .chart.compact { display: none; }
        @media (max-width: 40rem) { body { font-size: 15px; } main { padding: .6rem; } .chart.wide { display: none; } .chart.compact { display: block; }
          table.reflow thead { display: none; }
          table.reflow, table.reflow tbody, table.reflow tr, table.reflow td { display: block; width: 100%; }
          table.reflow tr { border-bottom: 1px solid var(--line); padding: .35rem 0; }
          table.reflow td { border: none; padding: .1rem .5rem; display: flex; flex-wrap: wrap; gap: .3rem .6rem; text-align: left; }
          table.reflow td[data-label]::before { content: attr(data-label); color: var(--muted); min-width: 7.5rem; flex: none; }
          table.reflow td > * { min-width: 0; } table.reflow td > .with-advice { flex: 1 1 10rem; } }
        """
}

/// A page that only says something (errors, confirmations).
enum MessagePage {
    struct Model { let heading: String; let message: String; let back: String? }
    static let template = """
        <h1>{{heading}}</h1>
        <p>{{message}}</p>
        {{#back}}<p><a href="{{back}}">Back</a></p>{{/back}}
        """
}
