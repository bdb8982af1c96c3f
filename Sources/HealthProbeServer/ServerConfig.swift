import Foundation
import HealthProbeArchive
import HealthProbeProtocol
import HealthProbeCanonical

/// `hp-server` settings from a JSON file (default `<data>/config.json`);
/// command-line options override them. Unknown keys are refused by name, so a
/// typo is never silently ignored. See `deploy/config.example.json`.
public struct ServerConfig: Sendable, Equatable {
    /// Address to listen on for sync, HOST:PORT.
    public var listen: String?
    /// Address written into enrollment tokens, when nodes reach the server by another name.
    public var advertise: String?
    /// Address of the HTTPS web dashboard and API, HOST:PORT; absent: no dashboard.
    public var webListen: String?
    /// Loopback address for the Prometheus metrics endpoint; absent: no endpoint.
    public var metricsListen: String?
    /// swift-log level: trace, debug, info, notice, warning, error, critical.
    public var logLevel: String?
    public var helloTimeoutSeconds: Double?
    public var idleTimeoutSeconds: Double?
    /// Replicas kept open between bundles (1...1000; default 64). Each kept one
    /// holds its connections and prepared statements (about 1-1.5 MB) and about eight
    /// file descriptors; reopening one costs about 4 ms of CPU per bundle
    /// (`hp-bench apply`, measured 2026-11-24 at c570ff8: git log -p docs/benchmarks.md).
    public var keptReplicas: Int?
    /// `kept_replicas` when neither the file nor the command line sets it, and its allowed range.
    public static let defaultKeptReplicas = 64
    public static let keptReplicasRange = 1...1000

    /// Threads that verify and apply bundles, different chains in parallel
    /// (1...64; default one more than the cores, so that a core does not idle
    /// while an apply waits for its commit to reach the disk).
    public var applyThreads: Int?
    /// `apply_threads` when neither the file nor the command line sets it, and its allowed range.
    public static var defaultApplyThreads: Int { ProcessInfo.processInfo.activeProcessorCount + 1 }
    public static let applyThreadsRange = 1...64

    /// How alert email is sent; absent: email channels cannot deliver.
    public var smtp: SMTPSettings?
    /// Server-level alert thresholds and the verification schedule (`alerts`); absent: the defaults.
    public var alerts = AlertThresholds()

    /// Scheduled backups: the directory dated backups are written into, how often (hours,
    /// default 24) and how many are kept (default 7). Absent `backup_to`: none.
    public var backupTo: String?
    public var backupIntervalHours: Double?
    public var backupKeep: Int?
    public static let backupKeepRange = 1...1000

    /// MiB of the data directory's file system kept free: bundles are refused (`storage`,
    /// retryable) below it (default 1024, as the disk-space alert's threshold).
    public var diskReserveMiB: Int64?
    public static let defaultDiskReserveMiB: Int64 = 1024
    public static let diskReserveMiBRange = 1...(1 << 24)

    /// Object storage for accepted bundles and registry snapshots; nil: none. All six
    /// `s3_*` keys but `s3_prefix` are required once one is given.
    public var objectStore: ObjectStoreSettings?
    /// The shortest time between two registry snapshots uploaded (default 300 s).
    public var s3SnapshotSeconds: Double?
    /// How many complete registry snapshots the bucket keeps (default 48); older ones are deleted.
    public var s3KeepSnapshots: Int?
    public static let s3KeepSnapshotsRange = 1...100_000

    public static let keys: Set<String> = ["listen", "advertise", "web_listen", "metrics_listen", "log_level", "hello_timeout_seconds", "idle_timeout_seconds", "kept_replicas", "apply_threads", "disk_reserve_mib", "smtp", "alerts",
                                           "backup_to", "backup_interval_hours", "backup_keep",
                                           "s3_endpoint", "s3_bucket", "s3_prefix", "s3_region", "s3_access_key", "s3_secret_key", "s3_snapshot_seconds", "s3_keep_snapshots"]

    public init() {}

    /// Loads `path`, or `<data>/config.json` when `path` is nil (absent: all defaults).
    public static func load(dataDirectory: String, path: String? = nil) throws -> ServerConfig {
        let file = path ?? dataDirectory + "/config.json"
        guard FileManager.default.fileExists(atPath: file) else {
            if path != nil { throw ArchiveError(.notFound, "config file \(file) does not exist") }
            return ServerConfig()
        }
        let bytes = Array(try Data(contentsOf: URL(fileURLWithPath: file)))
        let value: JSONValue
        do { value = try JSONParser.parse(bytes) } catch {
            throw ArchiveError(.invalidInput, "config file \(file): \(error)")
        }
        guard case .object(let o) = value else { throw ArchiveError(.invalidInput, "config file \(file): the top level must be a JSON object") }
        if let unknown = o.keys.filter({ !keys.contains($0) }).sorted().first {
            throw ArchiveError(.invalidInput, "config file \(file): unknown key \"\(unknown)\" (known: \(keys.sorted().joined(separator: ", ")))")
        }
        func string(_ k: String) throws -> String? {
            switch o[k] {
            case nil, .null?: return nil
            case .string(let s)?: return s
            default: throw ArchiveError(.invalidInput, "config file \(file): \"\(k)\" must be a string")
            }
        }
        func number(_ k: String) throws -> Double? {
            switch o[k] {
            case nil, .null?: return nil
            case .number(let d)? where d > 0: return d
            default: throw ArchiveError(.invalidInput, "config file \(file): \"\(k)\" must be a positive number")
            }
        }
        var c = ServerConfig()
        c.listen = try string("listen")
        c.advertise = try string("advertise")
        c.metricsListen = try string("metrics_listen")
        c.webListen = try string("web_listen")
        c.logLevel = try string("log_level")
        // Durations: at most a year (hours: ten years), so that what is made of them (milliseconds,
        // a `Duration`) always holds them.
        func duration(_ k: String, max: Double) throws -> Double? {
            guard let d = try number(k) else { return nil }
            guard d <= max else { throw ArchiveError(.invalidInput, "config file \(file): \"\(k)\" must be at most \(Int(max))") }
            return d
        }
        c.helloTimeoutSeconds = try duration("hello_timeout_seconds", max: 31_536_000)
        c.idleTimeoutSeconds = try duration("idle_timeout_seconds", max: 31_536_000)
        func whole(_ k: String, _ range: ClosedRange<Int>) throws -> Int? {
            guard let d = try number(k) else { return nil }
            guard d == d.rounded(), let n = Int(exactly: d), range.contains(n) else {
                throw ArchiveError(.invalidInput, "config file \(file): \"\(k)\" must be a whole number \(range)")
            }
            return n
        }
        c.keptReplicas = try whole("kept_replicas", keptReplicasRange)
        c.applyThreads = try whole("apply_threads", applyThreadsRange)
        c.diskReserveMiB = try whole("disk_reserve_mib", diskReserveMiBRange).map(Int64.init)
        c.backupTo = try string("backup_to")
        c.backupIntervalHours = try duration("backup_interval_hours", max: 87_600)
        c.backupKeep = try whole("backup_keep", backupKeepRange)
        c.s3SnapshotSeconds = try duration("s3_snapshot_seconds", max: 31_536_000)
        c.s3KeepSnapshots = try whole("s3_keep_snapshots", s3KeepSnapshotsRange)
        let s3 = try ["s3_endpoint", "s3_bucket", "s3_prefix", "s3_region", "s3_access_key", "s3_secret_key"].map { ($0, try string($0)) }
        if s3.contains(where: { $0.1 != nil }) {
            if let missing = s3.first(where: { $0.1 == nil && $0.0 != "s3_prefix" }) {
                throw ArchiveError(.invalidInput, "config file \(file): \"\(missing.0)\" is missing (object storage needs s3_endpoint, s3_bucket, s3_region, s3_access_key and s3_secret_key)")
            }
            let v = Dictionary(uniqueKeysWithValues: s3.map { ($0.0, $0.1 ?? "") })
            guard let url = URL(string: v["s3_endpoint"]!), ["http", "https"].contains(url.scheme ?? ""), url.host != nil, url.path.isEmpty || url.path == "/" else {
                throw ArchiveError(.invalidInput, "config file \(file): \"s3_endpoint\" must be http(s)://HOST[:PORT] without a path, got \(v["s3_endpoint"]!)")
            }
            guard !v["s3_bucket"]!.isEmpty, !v["s3_bucket"]!.contains("/") else {
                throw ArchiveError(.invalidInput, "config file \(file): \"s3_bucket\" must be a bucket name without /")
            }
            c.objectStore = ObjectStoreSettings(endpoint: v["s3_endpoint"]!, bucket: v["s3_bucket"]!, prefix: v["s3_prefix"]!, region: v["s3_region"]!,
                                                accessKey: v["s3_access_key"]!, secretKey: v["s3_secret_key"]!)
        }
        for (k, v) in [("listen", c.listen), ("advertise", c.advertise), ("metrics_listen", c.metricsListen), ("web_listen", c.webListen)] {
            if let v, SyncAddress.parse(v, allowAnyPort: k != "advertise") == nil {
                throw ArchiveError(.invalidInput, "config file \(file): \"\(k)\" must be HOST:PORT, got \(v)")
            }
        }
        if let l = c.logLevel, !["trace", "debug", "info", "notice", "warning", "error", "critical"].contains(l) {
            throw ArchiveError(.invalidInput, "config file \(file): \"log_level\" \(l) is not a log level")
        }
        if let smtp = o["smtp"], smtp != .null { c.smtp = try Self.smtp(smtp, file: file) }
        if let alerts = o["alerts"], alerts != .null { c.alerts = try AlertThresholds.parse(alerts, file: file) }
        return c
    }

    /// The `smtp` object: `host` and `from` required, every key checked by name and type.
    static func smtp(_ value: JSONValue, file: String) throws -> SMTPSettings {
        guard case .object(let o) = value else { throw ArchiveError(.invalidInput, "config file \(file): \"smtp\" must be a JSON object") }
        if let unknown = o.keys.filter({ !SMTPSettings.keys.contains($0) }).sorted().first {
            throw ArchiveError(.invalidInput, "config file \(file): unknown key \"smtp.\(unknown)\" (known: \(SMTPSettings.keys.sorted().joined(separator: ", ")))")
        }
        func string(_ k: String) throws -> String? {
            switch o[k] {
            case nil, .null?: return nil
            case .string(let s)? where !s.isEmpty && s.count <= 1024 && !s.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }): return s
            default: throw ArchiveError(.invalidInput, "config file \(file): \"smtp.\(k)\" must be a non-empty string on one line")
            }
        }
        guard let host = try string("host") else { throw ArchiveError(.invalidInput, "config file \(file): \"smtp.host\" is required") }
        guard let from = try string("from") else { throw ArchiveError(.invalidInput, "config file \(file): \"smtp.from\" (the sender address) is required") }
        do { try AlertTables.validate(kind: .email, target: from) } catch {
            throw ArchiveError(.invalidInput, "config file \(file): \"smtp.from\" must be an address like healthprobe@example.org")
        }
        var s = SMTPSettings(host: host, from: from, username: try string("username"), password: try string("password"), caFile: try string("ca_file"))
        switch o["tls"] {
        case nil, .null?: break
        case .string(let t)? where SMTPSettings.TLSMode(rawValue: t) != nil:
            s.tls = SMTPSettings.TLSMode(rawValue: t) ?? .starttls
            if s.tls == .implicit { s.port = 465 }
        default: throw ArchiveError(.invalidInput, "config file \(file): \"smtp.tls\" must be \"starttls\" (port 587) or \"implicit\" (port 465)")
        }
        switch o["port"] {
        case nil, .null?: break
        case .number(let d)? where d == d.rounded() && (1...65535).contains(d): s.port = Int(d)
        default: throw ArchiveError(.invalidInput, "config file \(file): \"smtp.port\" must be a whole number 1...65535")
        }
        switch o["require_starttls"] {
        case nil, .null?: break
        case .bool(let b)?: s.requireStartTLS = b
        default: throw ArchiveError(.invalidInput, "config file \(file): \"smtp.require_starttls\" must be true or false")
        }
        switch o["timeout_seconds"] {
        case nil, .null?: break
        case .number(let d)? where d >= 1 && d <= 600: s.timeoutSeconds = d
        default: throw ArchiveError(.invalidInput, "config file \(file): \"smtp.timeout_seconds\" must be a number from 1 to 600")
        }
        if let name = try string("helo_name") {
            guard name.count <= 255, name.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "." || $0 == "-") }) else {
                throw ArchiveError(.invalidInput, "config file \(file): \"smtp.helo_name\" must be a host name")
            }
            s.heloName = name
        }
        if s.username != nil, s.password == nil {
            throw ArchiveError(.invalidInput, "config file \(file): \"smtp.username\" needs \"smtp.password\"")
        }
        if let ca = s.caFile, !FileManager.default.fileExists(atPath: ca) {
            throw ArchiveError(.invalidInput, "config file \(file): \"smtp.ca_file\" \(ca) does not exist")
        }
        return s
    }
}
