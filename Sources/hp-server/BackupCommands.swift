import ArgumentParser
import Foundation
import HealthProbeArchive
import HealthProbeCLI
import HealthProbeServer

struct ServerBackupCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "backup",
        abstract: "Copy the data directory consistently while the server is serving.",
        discussion: """
            Each replica, then the registry, is copied with SQLite's online backup (devices keep syncing); each \
            replica's stored bundles are copied for the sequences its copy holds. TARGET must be new or empty. \
            The copy is a data directory: `hp-server verify --data TARGET --full` checks it, `hp-server restore \
            --from TARGET` rebuilds a server from it. It holds the TLS private key: keep it private.
            """)
    @OptionGroup var options: DataOptions
    @Option(name: .long, help: "A new or empty directory to write the backup into.") var to: String

    func validate() throws {
        if to.isEmpty { throw ValidationError("--to must name a directory") }
        let (target, data) = (DataDirectory.resolved(to), DataDirectory.resolved(options.data))
        if target == data { throw ValidationError("--to must not be the data directory itself") }
        if DataDirectory.lies(target, within: data) {
            throw ValidationError("--to must be outside the data directory \(options.data): a backup inside it would be lost with the disk it is meant to outlive")
        }
    }

    func run() async throws {
        let report = try ServerBackup.run(options.store, to: to)
        if options.json { try Output.json(report); return }
        var t = TextTable(["chain", "bundles", "digest"], rightAligned: [1])
        for c in report.chains { t.add([String(c.chain.prefix(16)), String(c.bundles), c.digest.map { String($0.prefix(16)) } ?? "-"]) }
        print(t.render())
        print("backup written to \(report.target): \(report.chains.count) chain(s), bundles \(report.bundleBytes) bytes, replicas \(report.replicaBytes) bytes, registry \(report.registryBytes) bytes, \(String(format: "%.2f", report.seconds)) s")
    }
}

struct ServerRestoreCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "restore",
        abstract: "Rebuild a data directory from a backup directory or from object storage.",
        discussion: """
            The registry and the TLS identity come from the backup (devices sync on without enrolling again); each \
            replica is rebuilt by applying its stored bundles in order, each verified as the server verifies a bundle \
            it receives. From a directory, each chain's rebuilt digest must equal the one the backup recorded. \
            --from s3://BUCKET/PREFIX reads what `serve` uploaded; the endpoint, region and keys come from the s3_* \
            keys of --config (the old server's config.json). --data must be new or empty. \
            The result is a copy (a drill's) until `hp-server adopt` or --new-home: it serves and verifies, but takes no \
            scheduled backup and uploads nothing to object storage, whatever its config says.
            """)
    @Option(name: .long, help: "The new data directory (new or empty).") var data: String
    @Option(name: .long, help: "A backup directory, or s3://BUCKET[/PREFIX].") var from: String
    @Option(name: .long, help: "A config file whose s3_* keys reach the object store (for --from s3://...).") var config: String?
    @Option(name: .long, help: "Chains rebuilt at once (each takes about a core and a half, and up to about 150 MB at a million samples).") var jobs: Int = 1
    @Flag(name: .long, help: "This is the server's new home: scheduled backups and uploads to object storage run as configured (else they wait for `hp-server adopt`).") var newHome = false
    @Flag(name: .long, help: "Print JSON for tools instead of tables.") var json = false

    func validate() throws {
        guard (1...64).contains(jobs) else { throw ValidationError("--jobs must be 1 to 64, got \(jobs)") }
        if from.hasPrefix("s3://") {
            if from.dropFirst(5).split(separator: "/").first == nil { throw ValidationError("--from s3://BUCKET[/PREFIX] needs a bucket, got \(from)") }
            if config == nil { throw ValidationError("--from \(from) needs --config FILE with s3_endpoint, s3_region, s3_access_key and s3_secret_key") }
        } else if !FileManager.default.fileExists(atPath: from) {
            throw ValidationError("--from \(from) does not exist; give a directory `hp-server backup` wrote, or s3://BUCKET/PREFIX")
        } else if !FileManager.default.fileExists(atPath: from + "/healthprobe-server") {
            throw ValidationError("--from \(from) is not a backup directory (no healthprobe-server marker); give one `hp-server backup` wrote, or s3://BUCKET/PREFIX")
        }
    }

    func run() async throws {
        let report: ServerRestore.Report
        let line = ProgressLine(label: "restoring", enabled: Output.stdoutIsTerminal && !json)
        let progress: @Sendable (Int, Int) -> Void = { line.update(done: $0, total: $1, unit: "bundles") }
        defer { line.finish() }  // also when it fails: the error goes on a line of its own
        if from.hasPrefix("s3://") {
            let parts = from.dropFirst(5).split(separator: "/", maxSplits: 1)
            let settings = try ServerConfig.load(dataDirectory: data, path: config)
            guard let base = settings.objectStore else {
                throw ValidationError("--config \(config ?? "") has no s3_* keys; object storage needs s3_endpoint, s3_bucket, s3_region, s3_access_key and s3_secret_key")
            }
            let objects = ObjectStore(settings: ObjectStoreSettings(endpoint: base.endpoint, bucket: String(parts[0]), prefix: parts.count > 1 ? String(parts[1]) : "",
                                                                    region: base.region, accessKey: base.accessKey, secretKey: base.secretKey))
            report = try await ServerRestore.run(from: ObjectStoreRestoreSource(objects: objects), to: data, jobs: jobs, newHome: newHome, progress: progress)
        } else {
            report = try await ServerRestore.run(from: DirectoryRestoreSource(path: from), to: data, jobs: jobs, newHome: newHome, progress: progress)
        }
        line.finish()
        if json {
            try Output.json(report)
            // stdout stays one JSON document; what to do next goes beside it.
            FileHandle.standardError.write(Data((configAdvice + "\n").utf8))
            return
        }
        var t = TextTable(["chain", "bundles", "digest", "backup's digest"], rightAligned: [1])
        for c in report.chains {
            t.add([String(c.chain.prefix(16)), String(c.bundles), c.digest.map { String($0.prefix(16)) } ?? "-", c.expectedDigest.map { String($0.prefix(16)) } ?? "not recorded"])
        }
        print(t.render())
        print("restored \(report.target) from \(report.source): \(report.chains.count) chain(s), \(report.bundleBytes) bundle bytes applied, \(String(format: "%.2f", report.seconds)) s")
        print("next: hp-server verify --data \(report.target) --full, then start hp-server serve on it")
        print(configAdvice)
    }

    /// What to do next about the settings and the copy: a restore writes no config.json, and
    /// unless --new-home its result takes no scheduled backup and uploads nothing until adopted.
    var configAdvice: String {
        let old = from.hasPrefix("s3://") ? (config ?? "the old server's config.json") : from + "/config.json"
        let source = from.hasPrefix("s3://") || FileManager.default.fileExists(atPath: from + "/config.json") ? old : "the old server's config.json, if it had one,"
        if newHome { return "settings: none were restored; copy \(source) to \(data)/config.json before serving" }
        return "settings: none were restored. On the server's new home, copy \(source) to \(data)/config.json, then run `hp-server adopt --data \(data)`: "
            + "until then this is a copy that takes no scheduled backup and uploads nothing to object storage (a drill leaves it so)"
    }
}

struct ServerAdoptCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "adopt",
        abstract: "Make a restored or copied data directory the server's home: scheduled backups and uploads to object storage resume.",
        discussion: """
            `hp-server restore` makes a copy that takes no scheduled backup and uploads nothing, so that a restore \
            drill can never write into the live server's backups or bucket; so does a data directory copied \
            another way (tar, cp -a, rsync, a move to another disk). Run this once on the server's new \
            machine (with `serve` running or not: it takes effect within seconds). Not for a drill's copy. \
            When two servers write one bucket prefix, both pause their uploads: stop the copy, then run this \
            on the live server, which takes the prefix over (also when it has not paused yet: this looks at \
            the prefix of its config.json).
            """)
    @OptionGroup var options: DataOptions

    @Option(name: .long, help: "The config file `serve` reads, for its bucket prefix (JSON; default <data>/config.json).")
    var config: String?

    struct Report: Codable {
        var data: String
        /// False when it was not a copy waiting to be adopted.
        var adopted: Bool
        /// What it was restored or copied from (and when, for a restore).
        var restored: String?
        /// Not a copy, but its bucket prefix holds a second writer's conflict mark it had not
        /// seen yet: the takeover was asked for (nil without object storage, or when the
        /// prefix could not be read).
        var takeoverRequested: Bool?
        /// Not a copy, and another server took its bucket prefix over: this server pauses at
        /// its next check (the server named here wrote the takeover).
        var takenOverBy: String?
        /// Why the bucket prefix (or config.json) could not be read.
        var prefixError: String?
    }

    func run() async throws {
        try options.store.requireInitialized()
        let from = RestoredCopy.paused(options.data)
        let adopted = try RestoredCopy.adopt(options.data)
        if adopted { try options.store.registry().recordAudit(.cli, .adopt, target: nil, detail: from ?? "") }
        var report = Report(data: options.data, adopted: adopted, restored: from)
        // Not a copy: a second writer may have marked the prefix before this server looked.
        var state: OffsiteUploader.WriterMarkState?
        if !adopted {
            do {
                if let settings = try ServerConfig.load(dataDirectory: options.data, path: config).objectStore {
                    state = try await RestoredCopy.answerWriterMark(options.store, objects: ObjectStore(settings: settings, timeout: .seconds(10)))
                }
            } catch {
                report.prefixError = "\(error)"
            }
        }
        switch state {
        case .conflict?:
            report.takeoverRequested = true
            try options.store.registry().recordAudit(.cli, .adopt, target: nil, detail: "the bucket prefix, marked by a second writer")
        case .takenOverByAnother(let by)?:
            report.takeoverRequested = false
            report.takenOverBy = by ?? "another server"
        case .none?:
            report.takeoverRequested = false
        case nil:
            break
        }
        if options.json { try Output.json(report); return }
        if adopted {
            print("adopted \(options.data) (\(from ?? "restored")): scheduled backups and uploads to object storage run as its config.json says")
        } else if case .conflict(let by)? = state {
            print("\(options.data) is not a copy, but its bucket prefix holds a second writer's mark (\(SnapshotWriters.conflictKey), written by \(by ?? "a server")) that it had not seen yet: "
                  + "it takes the prefix over at its next upload round (while serving, within seconds). Stop the other server if it is still running")
        } else if case .takenOverByAnother(let by)? = state {
            print("\(options.data) is not a copy waiting to be adopted, and another server (\(by ?? "unnamed")) took its bucket prefix over: nothing was changed. "
                  + "This server pauses its uploads at its next check. If this is the live server and that one the copy, stop the copy, then run this again once this one has paused")
        } else {
            print("\(options.data) is not a copy waiting to be adopted: its backups and uploads already run as configured")
            if let e = report.prefixError {
                Output.err("note: its bucket prefix could not be looked at for a second writer (\(e)); if one was reported, run this again once the store answers")
            }
        }
    }
}
