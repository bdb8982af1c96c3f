import ArgumentParser
import Foundation
import HealthProbeArchive
import HealthProbeCLI
import HealthProbeNode
import HealthProbeProtocol

struct Enroll: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Enroll this node with a household server, using a token from `hp-server enroll`.",
        discussion: "Connects over TLS, accepting only the certificate whose fingerprint the token names, redeems the one-time secret, and keeps the server's address, the fingerprint and this node's own credential in the key directory (keys/server.json, mode 0600).")

    @OptionGroup var options: HomeOptions

    @Argument(help: "The token, as printed (hpenroll1....).")
    var token: String

    @Flag(name: .long, help: "Replace an existing enrollment.")
    var replace = false

    func run() async throws {
        let parsed: EnrollmentToken
        do { parsed = try EnrollmentToken(text: token) } catch { throw ValidationError("\(error)") }
        let keys = options.resolvedHome.keyStore
        if let existing = try NodeEnrollment.load(keys), !replace {
            throw ValidationError("this node is already enrolled as \(existing.name) with \(existing.address); pass --replace to enroll again")
        }
        let enrollment = try await SyncClient.enroll(token: parsed, clientTime: Date().timeIntervalSince1970)
        try enrollment.save(keys)
        if options.json { try Output.json(["name": enrollment.name, "address": enrollment.address, "fingerprint": enrollment.fingerprint]); return }
        print("enrolled as \(enrollment.name) with \(enrollment.address) (certificate \(enrollment.fingerprint.prefix(16))...)")
    }
}

/// The node's enrollment, or a message saying how to get one (`or`: the way a command has besides).
func requireEnrollment(_ options: HomeOptions, or alternative: String? = nil) throws -> NodeEnrollment {
    guard let e = try NodeEnrollment.load(options.resolvedHome.keyStore) else {
        throw ValidationError("this node is not enrolled with a server; ask the administrator for a token (`hp-server enroll --name NAME`) and run `hp-node enroll TOKEN`"
                              + (alternative.map { "; or, \($0)" } ?? ""))
    }
    return e
}

struct Sync: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Send every observation the server has not acknowledged, oldest first (over TLS, to the enrolled server).",
        discussion: "Each bundle is built, re-hashed from its bytes, sent in zlib parts, and recorded as acknowledged once the server has applied it. After a disconnect, run it again: it resumes from the server's position.")

    @OptionGroup var options: HomeOptions

    @Option(name: .long, help: "Server address, HOST:PORT (default: the enrolled address).")
    var server: String?

    func validate() throws {
        if let server, SyncAddress.parse(server) == nil { throw ValidationError("--server must be HOST:PORT, got \(server)") }
    }

    func run() async throws {
        let enrollment = try requireEnrollment(options)
        let node = try options.open()
        let address = server.flatMap { SyncAddress.parse($0) }
        var client = SyncClient(node: node, outbox: options.resolvedHome.root + "/outbox", logger: NodeLogging.logger())
        let progress = ProgressLine(label: "syncing")
        client.onProgress = { seq, total in progress.update(done: seq, total: total, unit: "bundles") }
        let report = try await client.sync(enrollment, host: address?.host, port: address?.port)
        progress.finish()
        if options.json { try Output.json(report); return }
        if report.sent == 0 && report.alreadyApplied == 0 {
            print("up to date: the server has all \(report.lastSequence) observations of this chain")
        } else {
            print("sent \(report.sent) bundle(s) (\(report.alreadyApplied) already applied); the server now has sequence \(report.lastSequence)")
            print("\(report.bytesOnWire) bytes on the wire for \(report.uncompressedBytes) bytes of bundles")
        }
    }
}

struct Household: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "The household summary from the enrolled server: every chain side by side, never merged.")

    @OptionGroup var options: HomeOptions
    @Option(name: .long, help: "One sample type (shows its daily aggregates).") var type: String?
    @Option(name: .long, help: "Daily rows from this UTC date.") var from: String?
    @Option(name: .long, help: "Daily rows before this UTC date.") var to: String?
    @Option(name: .long, help: "Server address, HOST:PORT (default: the enrolled address).") var server: String?

    func validate() throws {
        _ = try from.map { try CLIDate.parse($0, option: "--from") }
        _ = try to.map { try CLIDate.parse($0, option: "--to") }
        if let server, SyncAddress.parse(server) == nil { throw ValidationError("--server must be HOST:PORT, got \(server)") }
    }

    func run() async throws {
        let enrollment = try requireEnrollment(options)
        guard let (host, port) = server.flatMap({ SyncAddress.parse($0) }) ?? SyncAddress.parse(enrollment.address) else {
            throw ValidationError("the enrolled address \(enrollment.address) is not HOST:PORT")
        }
        let report = try await SyncClient.household(enrollment, host: host, port: port, type: type,
                                                    from: try from.map { try CLIDate.parse($0, option: "--from") },
                                                    to: try to.map { try CLIDate.parse($0, option: "--to") },
                                                    clientTime: Date().timeIntervalSince1970)
        if options.json { try Output.json(report); return }
        HouseholdTable.print(report, type: type)
    }
}
