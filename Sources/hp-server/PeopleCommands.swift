import ArgumentParser
import Foundation
import HealthProbeCLI
import HealthProbeProtocol
import HealthProbeServer

/// `hp-server person`: the people of the household, their roles, and sharing.
struct PersonCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "person",
        abstract: "Manage the household's people: add, list, remove, password, role, give a device, share a chain.",
        discussion: "Roles: admin (everything), member (their own chains and those shared with them), viewer (only chains shared with them, read-only). People sign in to the web dashboard (`hp-server serve --web HOST:PORT`) with their name and password.",
        subcommands: [Add.self, List.self, Remove.self, Password.self, Role.self, Give.self, Share.self, Unshare.self])

    /// A password from stdin (`--password-stdin`) or a generated one, printed once.
    struct PasswordSource: ParsableArguments {
        @Flag(name: .long, help: "Read the password from the first line of standard input (else one is generated and printed once).")
        var passwordStdin = false

        @Option(name: .long, help: ArgumentHelp("bcrypt cost, 4 to 16 (default 12).", visibility: .hidden))
        var bcryptCost: UInt8 = PasswordHashing.defaultCost

        func validate() throws {
            guard (4...16).contains(bcryptCost) else { throw ValidationError("--bcrypt-cost must be 4 to 16") }
        }

        /// The password and whether it was generated.
        func read() throws -> (String, Bool) {
            if passwordStdin {
                guard let line = readLine(strippingNewline: true), People.passwordLength.contains(line.count) else {
                    throw ValidationError("the password on standard input must be \(People.passwordLength.lowerBound) to \(People.passwordLength.upperBound) characters")
                }
                return (line, false)
            }
            // 20 characters from a 32-letter alphabet: 100 bits.
            let alphabet = Array("abcdefghjkmnpqrstuvwxyz23456789AB")
            var g = SystemRandomNumberGenerator()
            return (String((0..<20).map { _ in alphabet[Int.random(in: 0..<alphabet.count, using: &g)] }), true)
        }
    }

    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Add a person.")
        @OptionGroup var options: DataOptions
        @Argument(help: "Name: 1 to 64 ASCII letters, digits, '.', '_' or '-'.") var name: String
        @Option(name: .long, help: "admin, member or viewer.") var role: String
        @OptionGroup var password: PasswordSource

        func validate() throws {
            guard DeviceName.isValid(name) else { throw ValidationError("the name must be 1 to 64 ASCII letters, digits, '.', '_' or '-'") }
            guard People.Role(rawValue: role) != nil else { throw ValidationError("--role must be admin, member or viewer, got \(role)") }
        }

        func run() async throws {
            let (secret, generated) = try password.read()
            let person = try options.store.registry().addPerson(name: name, role: People.Role(rawValue: role)!, password: secret,
                                                                 now: Date().timeIntervalSince1970, cost: password.bcryptCost)
            if options.json {
                struct Added: Encodable { let person: People.Person; let password: String? }
                try Output.json(Added(person: person, password: generated ? secret : nil))
                return
            }
            print("added \(name) (\(role))")
            if generated { print("password (shown once): \(secret)") }
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List people, their roles and devices.")
        @OptionGroup var options: DataOptions

        func run() async throws {
            let people = try options.store.registry().people()
            if options.json { try Output.json(people); return }
            var t = TextTable(["person", "role", "password", "devices"])
            for p in people { t.add([p.name, p.role.rawValue, p.hasPassword ? "set" : "not set", p.devices.joined(separator: " ")]) }
            print(people.isEmpty ? "no people; add one with `hp-server person add NAME --role admin`" : t.render())
        }
    }

    struct Remove: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Remove a person who has no devices (their shares go with them).")
        @OptionGroup var options: DataOptions
        @Argument(help: "Name.") var name: String

        func run() async throws {
            try options.store.registry().removePerson(name: name)
            print("removed \(name)")
        }
    }

    struct Password: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Set a person's password; every web session of theirs ends at once.")
        @OptionGroup var options: DataOptions
        @Argument(help: "Name.") var name: String
        @OptionGroup var password: PasswordSource

        func run() async throws {
            let (secret, generated) = try password.read()
            try options.store.registry().setPassword(person: name, password: secret, cost: password.bcryptCost)
            print("password set for \(name); their web sessions ended")
            if generated { print("password (shown once): \(secret)") }
        }
    }

    struct Role: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Change a person's role (the last admin keeps theirs); their web sessions end at once.")
        @OptionGroup var options: DataOptions
        @Argument(help: "Name.") var name: String
        @Argument(help: "admin, member or viewer.") var role: String

        func validate() throws {
            guard People.Role(rawValue: role) != nil else { throw ValidationError("the role must be admin, member or viewer, got \(role)") }
        }

        func run() async throws {
            try options.store.registry().setRole(person: name, role: People.Role(rawValue: role)!)
            print("\(name) is now \(role)")
        }
    }

    struct Give: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Give a device (and its chains) to another person.")
        @OptionGroup var options: DataOptions
        @Argument(help: "Device name.") var device: String
        @Option(name: .long, help: "The person who gets it.") var to: String

        func run() async throws {
            try options.store.registry().giveDevice(device, to: to)
            print("\(device) now belongs to \(to)")
        }
    }

    struct Share: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Share a chain with a person (read-only for them).")
        @OptionGroup var options: DataOptions
        @Argument(help: "Chain hash or a unique prefix (see `hp-server chains`).") var chain: String
        @Option(name: .long, help: "The person to share it with.") var with: String

        func run() async throws {
            let hash = try options.store.chain(matching: chain)
            try options.store.registry().share(chain: hash, with: with, now: Date().timeIntervalSince1970)
            print("chain \(hash.prefix(16)) shared with \(with)")
        }
    }

    struct Unshare: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Take a shared chain back from a person.")
        @OptionGroup var options: DataOptions
        @Argument(help: "Chain hash or a unique prefix.") var chain: String
        @Option(name: .long, help: "The person to take it back from.") var from: String

        func run() async throws {
            let hash = try options.store.chain(matching: chain)
            try options.store.registry().unshare(chain: hash, from: from)
            print("chain \(hash.prefix(16)) no longer shared with \(from)")
        }
    }
}
