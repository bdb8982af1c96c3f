import ArgumentParser
import Foundation
import HealthProbeArchive
import HealthProbeCLI
import HealthProbeServer
import HealthProbeProtocol

struct Enroll: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Issue a one-time enrollment token for a device (valid 24 hours).",
        discussion: "Give the printed token to the device's owner: `hp-node enroll TOKEN`. It carries the server's address, its certificate fingerprint (the node pins it) and a secret that works once; the node then receives its own long-term credential.")
    @OptionGroup var options: DataOptions
    @Option(name: .long, help: "Device name: 1 to 64 ASCII letters, digits, '.', '_' or '-'.") var name: String
    @Option(name: .long, help: "The address nodes reach the server at, HOST:PORT (default: the config file's listen address, else 127.0.0.1:7447).") var address: String?
    @Option(name: .long, help: "The person the device belongs to (default: the only person who may own devices; required when there are several).") var person: String?
    @Option(name: .long, help: "Make the token a restore token: the new device replaces the one owning this chain (a chain hash or its prefix; see `hp-server chains`) and takes the chain over when it first asks for it (a node asks for the chain its key files make: `hp-node restore --token` with the old device's).") var restoreChain: String?

    func validate() throws {
        guard DeviceRegistry.isValidName(name) else { throw ValidationError("--name must be 1 to 64 ASCII letters, digits, '.', '_' or '-'") }
        if let address, SyncAddress.parse(address) == nil { throw ValidationError("--address must be HOST:PORT, got \(address)") }
        if let restoreChain, restoreChain.count < 8 || !restoreChain.allSatisfy({ $0.isASCII && $0.isHexDigit }) {
            throw ValidationError("--restore-chain must be at least 8 hex digits of the chain hash (see `hp-server chains`), got '\(restoreChain)': a shorter prefix could name a chain not meant")
        }
    }

    func run() async throws {
        let store = options.store
        let config = try ServerConfig.load(dataDirectory: options.data)
        let addr = address ?? config.advertise ?? config.listen ?? "127.0.0.1:7447"
        let registry = try store.registry()
        if let restoreChain {
            let chain = try store.chain(matching: restoreChain)
            let (secret, owner) = try registry.issueRestoreToken(name: name, chain: chain, person: try person.map { try registry.personForEnrollment($0) },
                                                                 now: Date().timeIntervalSince1970)
            let token = EnrollmentToken(address: addr, fingerprint: try store.identity().fingerprint, name: name, secret: secret)
            if options.json { try Output.json(["name": name, "address": addr, "token": token.text, "restore_chain": chain, "replacing": owner]); return }
            print(token.text)
            for other in try registry.devices() where other.name != name && other.restoreChain == chain && other.state != .revoked {
                FileHandle.standardError.write(Data("note: \(other.name) also holds a restore token for this chain; whichever device asks for it first takes it over and the other's becomes stale (revoke the one not meant: hp-server revoke NAME)\n".utf8))
            }
            FileHandle.standardError.write(Data("one-time restore token for \(name) at \(addr), valid 24 hours: it takes chain \(chain.prefix(12)) over from \(owner) when it first asks for it, which a node does with that device's key files (then \(owner) no longer writes it; revoke it with `hp-server revoke`). On the new device, with the old device's key files in HOME/keys: hp-node restore --token TOKEN\n".utf8))
            return
        }
        // No people yet (a server set up before people existed): the device has no person until `person give`.
        let owner: Int64? = try (person == nil && registry.people().isEmpty) ? nil : registry.personForEnrollment(person)
        let secret = try registry.issueToken(name: name, person: owner, now: Date().timeIntervalSince1970)
        if owner == nil {
            FileHandle.standardError.write(Data("note: the household has no people yet, so \(name) belongs to nobody; add one with `hp-server person add NAME --role admin`, then `hp-server person give \(name) --to NAME`\n".utf8))
        }
        let token = EnrollmentToken(address: addr, fingerprint: try store.identity().fingerprint, name: name, secret: secret)
        if options.json { try Output.json(["name": name, "address": addr, "token": token.text]); return }
        print(token.text)
        FileHandle.standardError.write(Data("one-time token for \(name) at \(addr), valid 24 hours; on the device: hp-node enroll TOKEN\n".utf8))
    }
}

struct Revoke: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Shut a device out: its credential and any unused token stop working at once (its chains and their data stay).")
    @OptionGroup var options: DataOptions
    @Argument(help: "Device name.") var name: String

    func run() async throws {
        try options.store.registry().revoke(name: name, now: Date().timeIntervalSince1970)
        print("revoked \(name); it can no longer authenticate")
    }
}

struct Devices: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "List enrolled devices, their state and the chains they own.")
    @OptionGroup var options: DataOptions

    func run() async throws {
        let devices = try options.store.registry().devices()
        if options.json { try Output.json(devices); return }
        var t = TextTable(["device", "person", "state", "enrolled (UTC)", "revoked (UTC)", "chains"])
        for d in devices {
            t.add([d.name, d.person ?? "-", d.state.label, Output.date(d.enrolledAt), Output.date(d.revokedAt), d.shownChains.joined(separator: " ")])
        }
        print(devices.isEmpty ? "no devices; issue a token with `hp-server enroll --name NAME`" : t.render())
        for d in devices { if let advice = d.advice { print("\(d.name): \(advice)") } }
    }
}
