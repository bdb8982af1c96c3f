import Foundation
import HealthProbeArchive
import HealthProbeCanonical
import HealthProbeServer
import Hummingbird

/// `/alerts`: the signed-in person's alerts (chains they may read, through `Access`) with
/// Acknowledge and Snooze, their channels and quiet hours. Every form posts with the
/// session's CSRF token, then redirects back (post-redirect-get), the outcome in the flash.
/// A form carrying the session's CSRF token.
protocol CarriesCSRF: Decodable { var csrf: String? { get } }

extension WebServer {
    struct AlertForm: CarriesCSRF { let csrf: String? }
    /// Acknowledge: `fired_at`, the firing the page showed (Unix seconds as the page wrote them).
    struct AckForm: CarriesCSRF { let csrf: String?; let fired_at: String? }
    struct SnoozeForm: CarriesCSRF { let csrf: String?; let hours: String? }
    struct ChannelForm: Decodable { let csrf: String?; let kind: String; let target: String; let secret: String? }
    struct QuietForm: Decodable { let csrf: String?; let from: String?; let to: String?; let zone: String?; let clear: String? }

    func addAlertRoutes(_ router: Router<WebContext>) {
        router.get("/alerts") { _, context in
            let person = try await access.person(context)
            let shown = await flash.take(context.sessions.session?.csrf)
            return try await alertsPage(person, context, notice: shown?.notice)
        }
        router.post("/alerts/{chain}/{condition}/ack") { request, context in
            let ((person, chain, condition), form) = try await alertFormTarget(request, context, AckForm.self)
            let firedAt = try form.fired_at.map { text -> Double in
                guard let v = Double(text), v.isFinite else { throw WebError(.badRequest, "fired_at is the alert's firing time in Unix seconds, as the page sends it") }
                return v
            }
            let registry = self.registry
            try await blocking {
                try registry.acknowledgeAlert(chain: chain, condition: condition, person: person, now: Self.now(), firedAt: firedAt, by: .init(name: person.name, via: .web))
            }
            return await alertsDone(context, "Acknowledged: no more reminders until it resolves.")
        }
        router.post("/alerts/{chain}/{condition}/snooze") { request, context in
            let ((person, chain, condition), form) = try await alertFormTarget(request, context, SnoozeForm.self)
            guard let text = form.hours, let hours = Int(text), (1...720).contains(hours) else {
                throw WebError(.badRequest, "snooze for a whole number of hours from 1 to 720")
            }
            let registry = self.registry
            let until = Self.now() + Double(hours) * 3600
            let zone = try await blocking {
                try registry.snoozeAlert(chain: chain, condition: condition, person: person, until: until, by: .init(name: person.name, via: .web))
                return Self.shownZone(try registry.quietHours(person: person.name))
            }
            return await alertsDone(context, "Snoozed until \(zone.time(until)) \(zone.zoneName).")
        }
        router.post("/alerts/channels") { request, context in
            let person = try await access.person(context)
            let form = try await Forms.decode(ChannelForm.self, request)
            try Self.checkCSRF(form.csrf, context)
            guard let kind = AlertTables.Channel.Kind(rawValue: form.kind) else { throw WebError(.badRequest, "kind is email, webhook or ntfy") }
            let target = form.target.trimmingCharacters(in: .whitespaces)
            let secret = form.secret.flatMap { $0.isEmpty ? nil : $0 }
            guard secret == nil || kind == .webhook else { throw WebError(.badRequest, "only a webhook has a secret; leave it empty") }
            let registry = self.registry
            let channel = try await blocking {
                try registry.addAlertChannel(person: person.name, kind: kind, target: target, secret: secret, now: Self.now(), by: .init(name: person.name, via: .web))
            }
            return await alertsDone(context, "Added a \(channel.kind.rawValue) channel to \(channel.target).")
        }
        router.post("/alerts/channels/{id}/test") { request, context in
            let person = try await access.person(context)
            let form = try await Forms.decode(AlertForm.self, request)
            try Self.checkCSRF(form.csrf, context)
            let id = try Params.id(context, "id")
            let registry = self.registry, sender = settings.alertSender
            let message = try await blocking { try registry.alertTestMessage(channelID: id, person: person.name, now: Self.now()) }
            do { try await sender.send(message) } catch {
                return await alertsDone(context, "The test message was not delivered: \(error)")
            }
            return await alertsDone(context, "Test message delivered to \(message.target).")
        }
        router.post("/alerts/channels/{id}/remove") { request, context in
            let person = try await access.person(context)
            let form = try await Forms.decode(AlertForm.self, request)
            try Self.checkCSRF(form.csrf, context)
            let id = try Params.id(context, "id")
            let registry = self.registry
            try await blocking { try registry.removeAlertChannel(id: id, person: person.name, by: .init(name: person.name, via: .web)) }
            return await alertsDone(context, "Removed the channel.")
        }
        router.post("/alerts/quiet") { request, context in
            let person = try await access.person(context)
            let form = try await Forms.decode(QuietForm.self, request)
            try Self.checkCSRF(form.csrf, context)
            let hours: QuietHours?
            if form.clear != "yes" {
                let zone = form.zone.map { $0.trimmingCharacters(in: .whitespaces) }.flatMap { $0.isEmpty ? nil : $0 } ?? "UTC"
                guard QuietHours.timeZone(zone) != nil else {
                    throw WebError(.badRequest, "time zone: \"\(zone.prefix(64))\" is not an IANA time zone; give one like Europe/Berlin, America/New_York or UTC")
                }
                guard let from = form.from.flatMap(Self.minute), let to = form.to.flatMap(Self.minute), let h = QuietHours(start: from, end: to, zone: zone) else {
                    throw WebError(.badRequest, "from and to: quiet hours are two different times of day, HH:MM")
                }
                hours = h
            } else {
                hours = nil
            }
            let registry = self.registry, name = person.name
            try await blocking { try registry.setQuietHours(person: name, hours) }
            return await alertsDone(context, hours == nil ? "No quiet hours." : "Quiet hours set.")
        }
    }

    /// The person, the alert's chain (which they must be allowed to read, else not found; `server`
    /// for an admin), its condition, and the checked form.
    func alertFormTarget<F: CarriesCSRF>(_ request: Request, _ context: WebContext, _ type: F.Type) async throws
        -> ((People.Person, String, AlertCondition), F) {
        let person = try await access.person(context)
        let form = try await Forms.decode(F.self, request)
        try Self.checkCSRF(form.csrf, context)
        let chain = try await access.alertSubject(context, for: person)
        guard let condition = context.parameters.get("condition").flatMap(AlertCondition.init(rawValue:)) else {
            throw WebError(.notFound, "no such alert condition")
        }
        return ((person, chain, condition), form)
    }

    func alertsDone(_ context: WebContext, _ notice: String) async -> Response {
        await flash.put(context.sessions.session?.csrf, .init(notice: notice, token: nil))
        return Responses.redirect("/alerts")
    }

    func alertsPage(_ person: People.Person, _ context: WebContext, notice: String?) async throws -> Response {
        let registry = self.registry
        let (states, channels, quiet, devices) = try await blocking {
            (try registry.alertStates(for: person), try registry.alertChannels(person: person.name), try registry.quietHours(person: person.name), try registry.devices())
        }
        var owners: [String: (device: String, person: String)] = [:]
        for d in devices { for c in d.chains { owners[c] = (d.name, d.person ?? "no one") } }
        let csrf = context.sessions.session?.csrf ?? ""
        // Times in the person's own zone (their quiet hours'), UTC until they set one.
        let zone = Self.shownZone(quiet)
        let now = Self.now()
        func local(_ seconds: Double?) -> String { seconds.map { "\(zone.time($0)) \(zone.zoneName)" } ?? "" }
        let model = AlertsPage.Model(
            csrf: csrf, notice: notice,
            alerts: states.map { s in
                let server = s.chain == AlertCondition.serverKey
                return AlertsPage.AlertRow(chain: s.chain, link: server ? "/admin" : "/chains/\(s.chain)",
                                    device: server ? "this server" : owners[s.chain]?.device ?? String(s.chain.prefix(12)),
                                    owner: server ? "admins" : owners[s.chain]?.person ?? "no one",
                                    condition: s.condition.rawValue, words: s.condition.words, state: s.state, firing: s.state == "firing",
                                    since: (s.state == "firing" ? s.firedAt : s.resolvedAt).map { ChainGlance.ago(now - $0) } ?? "",
                                    sinceExact: local(s.state == "firing" ? s.firedAt : s.resolvedAt),
                                    sinceISO: DashboardQueries.text(s.state == "firing" ? s.firedAt : s.resolvedAt) ?? "",
                                    firedAt: s.firedAt.map { String($0) } ?? "",
                                    detail: s.detail, acknowledgedBy: s.state == "firing" ? s.acknowledgedBy : nil,
                                    snoozedUntil: s.state == "firing" ? s.snoozedUntil.flatMap { $0 > now ? local($0) : nil } : nil)
            },
            channels: channels.map { .init(id: $0.id, kind: $0.kind.rawValue, target: $0.target, secretHint: $0.secretHint, added: local($0.createdAt)) },
            quiet: quiet.map { "\(Self.clock($0.start)) to \(Self.clock($0.end)) (\($0.zone))" },
            quietFrom: quiet.map { Self.clock($0.start) } ?? "22:00", quietTo: quiet.map { Self.clock($0.end) } ?? "07:00",
            quietZone: quiet?.zone ?? "UTC", zones: Self.zoneNames, shownZone: zone.zoneName)
        var response = pages.render("alerts", model, chrome: chrome("Alerts", person, context))
        response.headers[.cacheControl] = "no-store"
        return response
    }

    /// Minutes after midnight from `HH:MM`, nil unless a time of day.
    static func minute(_ text: String) -> Int? {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, parts.allSatisfy({ $0.count == 2 && $0.allSatisfy { $0.isASCII && $0.isNumber } }),
              let h = Int(parts[0]), let m = Int(parts[1]), (0...23).contains(h), (0...59).contains(m) else { return nil }
        return h * 60 + m
    }

    /// The time zones offered for quiet hours (IANA names this system knows).
    static let zoneNames: [String] = TimeZone.knownTimeZoneIdentifiers.filter { $0.contains("/") || $0 == "UTC" }.sorted()

    /// The zone a person's alert times are shown in: their quiet hours', UTC until they set some.
    static func shownZone(_ quiet: QuietHours?) -> LocalDays { LocalDays(identifier: quiet?.zone ?? "UTC", secondsFromGMT: nil) }

    /// `HH:MM` for minutes after midnight.
    static func clock(_ minute: Int) -> String { String(format: "%02d:%02d", minute / 60, minute % 60) }
}
