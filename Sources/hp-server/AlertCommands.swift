import ArgumentParser
import Foundation
import HealthProbeCLI
import HealthProbeServer

/// `hp-server alert`: alert channels per person, and the alerts themselves.
struct AlertCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "alert",
        abstract: "Alerts: channels per person (webhook, ntfy, email), list, acknowledge and snooze alerts.",
        discussion: "The server evaluates every chain each minute (`alerts.evaluate_seconds` in the config file) while `hp-server serve` runs (docs/alerts.md).",
        subcommands: [Channel.self, List.self, Ack.self, Snooze.self, Quiet.self, Cadence.self])

    struct Channel: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Add, list, remove or test a person's alert channels.",
                                                        subcommands: [Add.self, ChannelList.self, Remove.self, Test.self])
    }

    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Add a channel: --webhook URL [--secret S], --ntfy URL or --email ADDRESS.")
        @OptionGroup var options: DataOptions
        @Option(name: .long, help: "The person told.") var person: String
        @Option(name: .long, help: "A webhook URL (JSON body, X-HP-Signature).") var webhook: String?
        @Option(name: .long, help: "The webhook's HMAC secret, 16 to 256 characters (generated if left out).") var secret: String?
        @Option(name: .long, help: "An ntfy topic URL.") var ntfy: String?
        @Option(name: .long, help: "An email address.") var email: String?

        func validate() throws {
            guard [webhook, ntfy, email].compactMap({ $0 }).count == 1 else { throw ValidationError("give exactly one of --webhook, --ntfy or --email") }
            if secret != nil && webhook == nil { throw ValidationError("--secret goes with --webhook only") }
            let (kind, target) = chosen
            do { try AlertTables.validate(kind: kind, target: target) } catch let e as DeviceRegistry.AuthError { throw ValidationError(e.message) }
        }

        var chosen: (AlertTables.Channel.Kind, String) {
            if let webhook { return (.webhook, webhook) }
            if let ntfy { return (.ntfy, ntfy) }
            return (.email, email ?? "")
        }

        func run() async throws {
            let (kind, target) = chosen
            let c = try options.store.registry().addAlertChannel(person: person, kind: kind, target: target, secret: secret, now: Date().timeIntervalSince1970)
            if options.json { try Output.json(c); return }
            print("channel \(c.id) for \(c.person): \(c.kind.rawValue) \(c.target)")
            if kind == .webhook && secret == nil {
                print("the generated secret is kept by the server; set your own with --secret to verify X-HP-Signature")
            }
        }
    }

    struct ChannelList: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "list", abstract: "List channels (secrets only as a hint).")
        @OptionGroup var options: DataOptions
        @Option(name: .long, help: "Only this person's channels.") var person: String?

        func run() async throws {
            let channels = try options.store.registry().alertChannels(person: person)
            if options.json { try Output.json(channels); return }
            var t = TextTable(["id", "person", "kind", "target", "secret", "added (UTC)"], rightAligned: [0])
            for c in channels { t.add([String(c.id), c.person, c.kind.rawValue, c.target, c.secretHint ?? "-", Output.date(c.createdAt)]) }
            print(channels.isEmpty ? "no channels" : t.render())
        }
    }

    struct Remove: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Remove a channel.")
        @OptionGroup var options: DataOptions
        @Option(name: .long, help: "The person whose channel it is.") var person: String
        @Argument(help: "The channel id (see `alert channel list`).") var id: Int64

        func run() async throws {
            try options.store.registry().removeAlertChannel(id: id, person: person)
            if options.json { try Output.json(["removed": id]) } else { print("removed channel \(id)") }
        }
    }

    struct Test: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Send a test message on a channel now.")
        @OptionGroup var options: DataOptions
        @Option(name: .long, help: "The person whose channel it is.") var person: String
        @Argument(help: "The channel id (see `alert channel list`).") var id: Int64
        @Option(name: .long, help: "The config file with the \"smtp\" settings for email (default <data>/config.json).") var config: String?

        func run() async throws {
            let settings = try ServerConfig.load(dataDirectory: options.data, path: config)
            let m = try options.store.registry().alertTestMessage(channelID: id, person: person, now: Date().timeIntervalSince1970)
            do { try await AlertSender.shared(smtp: settings.smtp).send(m) } catch {
                throw ValidationError("the test message was not delivered: \(error)")
            }
            if options.json { try Output.json(["delivered": m.key]) } else { print("delivered test message \(m.key)") }
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List firing and resolved alerts.")
        @OptionGroup var options: DataOptions
        @Option(name: .long, help: "Only alerts this person may see.") var person: String?

        func run() async throws {
            let r = try options.store.registry()
            let p = try person.map { name in
                guard let p = try r.person(named: name) else { throw ValidationError("no person named \(name) (see `hp-server person list`)") }
                return p
            }
            let states = try r.alertStates(for: p)
            if options.json { try Output.json(states); return }
            var t = TextTable(["chain", "condition", "state", "fired (UTC)", "acknowledged", "snoozed until (UTC)", "detail"])
            for s in states {
                t.add([String(s.chain.prefix(12)), s.condition.rawValue, s.state, Output.date(s.firedAt), s.acknowledgedBy ?? "-",
                       Output.date(s.snoozedUntil), s.detail])
            }
            print(states.isEmpty ? "no alerts" : t.render())
        }
    }

    struct Target: ParsableArguments {
        @Option(name: .long, help: "The person acting (must be allowed to read the chain).") var person: String
        @Option(name: .long, help: "Chain hash or a unique prefix of it; `server` for the server-level alerts.") var chain: String
        @Option(name: .long, help: "silent, refused, verification_failed, loss_found, disk_space_low, certificate_expiring, delivery_failing or backup_failing.") var condition: String

        func validate() throws {
            guard AlertCondition(rawValue: condition) != nil else {
                throw ValidationError("--condition must be one of \(AlertCondition.allCases.map(\.rawValue).joined(separator: ", ")), got \(condition)")
            }
        }

        func resolve(_ options: DataOptions) throws -> (DeviceRegistry, People.Person, String, AlertCondition) {
            let r = try options.store.registry()
            guard let p = try r.person(named: person) else { throw ValidationError("no person named \(person) (see `hp-server person list`)") }
            guard let c = AlertCondition(rawValue: condition) else { throw ValidationError("unknown condition \(condition)") }
            return (r, p, chain == AlertCondition.serverKey ? chain : try options.store.chain(matching: chain), c)
        }
    }

    struct Cadence: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "How long a chain may go without a good sync before it is silent: a fixed number of hours, or learned again.",
            discussion: "Learned by default: the mean interval between the chain's good syncs (24 h until one is seen). Either way the grace period (6 h) is added before `silent` fires.")
        @OptionGroup var options: DataOptions
        @Option(name: .long, help: "Chain hash or a unique prefix of it.") var chain: String
        @Option(name: .long, help: "Expect a good sync at least every this many hours (1 to 2160).") var hours: Double?
        @Flag(name: .long, help: "Forget the fixed value: learn the cadence from the chain's syncs again.") var learned = false

        func validate() throws {
            guard (hours != nil) != learned else { throw ValidationError("give --hours H or --learned") }
            if let hours, !(hours.isFinite && (1...2160).contains(hours)) { throw ValidationError("--hours must be between 1 and 2160") }
        }

        func run() async throws {
            let full = try options.store.chain(matching: chain)
            try options.store.registry().setSilentAfter(chain: full, seconds: hours.map { $0 * 3600 })
            if options.json { try Output.json(["chain": full, "expected_every_hours": hours.map { String($0) } ?? "learned"]); return }
            print(hours.map { "\(full.prefix(12)): silent after \(String(format: "%g", $0)) h without a good sync, plus the grace period" }
                  ?? "\(full.prefix(12)): the cadence is learned from its syncs again")
        }
    }

    struct Ack: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Acknowledge a firing alert: no reminders until it resolves.")
        @OptionGroup var options: DataOptions
        @OptionGroup var target: Target
        @Option(name: .customLong("fired-at"), help: ArgumentHelp("Acknowledge only the firing seen: its fired_at in Unix seconds, as `alert list --json` prints it. If it fired again since, nothing is acknowledged.", valueName: "seconds"))
        var firedAt: Double?

        func validate() throws {
            if let firedAt, !firedAt.isFinite || firedAt < 0 { throw ValidationError("--fired-at is Unix seconds as `hp-server alert list --json` prints fired_at, got \(firedAt)") }
        }

        func run() async throws {
            let (r, p, chain, c) = try target.resolve(options)
            try r.acknowledgeAlert(chain: chain, condition: c, person: p, now: Date().timeIntervalSince1970, firedAt: firedAt)
            if options.json { try Output.json(["acknowledged": c.rawValue]) } else { print("acknowledged \(c.rawValue) on \(chain.prefix(12))") }
        }
    }

    struct Snooze: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Snooze a firing alert for some hours: no reminders meanwhile.")
        @OptionGroup var options: DataOptions
        @OptionGroup var target: Target
        @Option(name: .long, help: "Hours, 1 to 720.") var hours: Int

        func validate() throws {
            guard (1...720).contains(hours) else { throw ValidationError("--hours must be 1 to 720, got \(hours)") }
        }

        func run() async throws {
            let (r, p, chain, c) = try target.resolve(options)
            let until = Date().timeIntervalSince1970 + Double(hours) * 3600
            try r.snoozeAlert(chain: chain, condition: c, person: p, until: until)
            if options.json { try Output.json(["snoozed_until": Output.date(until)]) } else { print("snoozed \(c.rawValue) on \(chain.prefix(12)) until \(Output.date(until))") }
        }
    }

    struct Quiet: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Set a person's quiet hours in their time zone: messages wait until they end.")
        @OptionGroup var options: DataOptions
        @Option(name: .long, help: "The person.") var person: String
        @Option(name: .long, help: "Start, HH:MM on the clock of --zone.") var from: String?
        @Option(name: .long, help: "End, HH:MM on the clock of --zone (may be after midnight).") var to: String?
        @Option(name: .long, help: "IANA time zone of --from and --to, like Europe/Berlin; daylight saving time is followed.") var zone = "UTC"
        @Flag(name: .long, help: "Remove the quiet hours.") var clear = false

        static func minutes(_ text: String, _ option: String) throws -> Int {
            let p = text.split(separator: ":", omittingEmptySubsequences: false)
            guard p.count == 2, p[0].count == 2, p[1].count == 2, let h = Int(p[0]), let m = Int(p[1]), (0...23).contains(h), (0...59).contains(m) else {
                throw ValidationError("\(option) must be HH:MM (00:00 to 23:59), got \(text)")
            }
            return h * 60 + m
        }

        func validate() throws {
            if clear { guard from == nil && to == nil else { throw ValidationError("--clear takes no --from or --to") }; return }
            guard let from, let to else { throw ValidationError("give --from and --to, or --clear") }
            guard QuietHours.timeZone(zone) != nil else {
                throw ValidationError("--zone must be an IANA time zone like Europe/Berlin, America/New_York or UTC, got \(zone)")
            }
            guard QuietHours(start: try Self.minutes(from, "--from"), end: try Self.minutes(to, "--to"), zone: zone) != nil else {
                throw ValidationError("--from and --to must differ")
            }
        }

        func run() async throws {
            let hours = try from.flatMap { f in try to.flatMap { QuietHours(start: try Self.minutes(f, "--from"), end: try Self.minutes($0, "--to"), zone: zone) } }
            try options.store.registry().setQuietHours(person: person, clear ? nil : hours)
            if options.json { try Output.json(hours) } else {
                print(hours.map { "quiet hours for \(person): \(from ?? "") to \(to ?? "") \($0.zone)" } ?? "no quiet hours for \(person)")
            }
        }
    }
}
