/// The sign-in form.
enum LoginPage {
    struct Model { let error: String?; let name: String?; var next: String? = nil }
    static let template = """
        <h1>Sign in</h1>
        {{#error}}<p class="alert refused_bundles" role="alert">{{error}}</p>{{/error}}
        <form method="post" action="/login" class="stack">
        {{#next}}<input type="hidden" name="next" value="{{next}}">{{/next}}
        <label>Name <input name="name" autocomplete="username" required maxlength="64" value="{{name}}"></label>
        <label>Password <input name="password" type="password" autocomplete="current-password" required maxlength="256"></label>
        <button type="submit">Sign in</button>
        </form>
        <p class="muted">No account? An admin adds people with <code>hp-server person add NAME --role member</code>.</p>
        """
}
