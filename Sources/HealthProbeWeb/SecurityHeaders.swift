import HTTPTypes
import Hummingbird

/// Headers on every response: a CSP without inline scripts (the pages have none), no
/// framing, no sniffing, no referrer, HTTPS only, and no caching of pages that show records.
struct SecurityHeaders<Context: RequestContext>: RouterMiddleware {
    static var csp: String {
        "default-src 'none'; style-src 'self'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
    }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var response = try await next(request, context)
        response.headers[.contentSecurityPolicy] = Self.csp
        response.headers[HTTPField.Name("X-Frame-Options")!] = "DENY"
        response.headers[.xContentTypeOptions] = "nosniff"
        // `same-origin`, not `no-referrer`: with no-referrer, Chromium sends `Origin: null` on the
        // pages' own form posts, which SameOriginWrites then cannot tell from a foreign one.
        response.headers[HTTPField.Name("Referrer-Policy")!] = "same-origin"
        response.headers[.strictTransportSecurity] = "max-age=31536000"
        if response.headers[.cacheControl] == nil { response.headers[.cacheControl] = "no-store" }
        response.headers[HTTPField.Name("Cross-Origin-Opener-Policy")!] = "same-origin"
        response.headers[HTTPField.Name("Permissions-Policy")!] = "camera=(), microphone=(), geolocation=()"
        return response
    }
}

/// Refuses state-changing requests that a browser says come from another site
/// (`Sec-Fetch-Site`, else `Origin`), before the CSRF token is even read.
struct SameOriginWrites<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        if request.method != .get && request.method != .head {
            if let site = request.headers[HTTPField.Name("Sec-Fetch-Site")!], site != "same-origin", site != "none" {
                throw WebError(.csrf, "cross-site request refused")
            }
            // HTTP/1.1 carries the authority in Host; the request head has it only for HTTP/2.
            if let origin = request.headers[.origin], origin != "https://\(request.head.authority ?? request.headers[HTTPField.Name("Host")!] ?? "")" {
                throw WebError(.csrf, "cross-origin request refused")
            }
        }
        return try await next(request, context)
    }
}
