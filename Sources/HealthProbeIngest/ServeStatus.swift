import Foundation
import Synchronization

/// What `hp-node serve` is doing, kept in `HOME/serve-status.json` after every change so
/// that `hp-node serve status` (another process) can show it: the endpoint, each capture
/// surface's last push, last sync and last error, and the watched folder. No health values.
public final class ServeStatus: Sendable {
    public struct Snapshot: Codable, Sendable, Equatable {
        public var pid: Int32 = 0
        public var startedAt: Double = 0
        public var updatedAt: Double = 0
        public var ingest: String?
        public var ingestEncrypted = true
        public var ingestCertificateFingerprint: String?
        /// When the endpoint's server certificate and its authority stop being valid.
        public var ingestCertificateExpiresAt: Double?
        public var ingestAuthorityExpiresAt: Double?
        /// Set when this start re-issued the server certificate: why, and the one replaced.
        public var ingestCertificateReissued: CertificateReissue?
        /// What to do about the endpoint's certificates (an authority near its end, say).
        public var ingestCertificateWarnings: [String]?
        public var watch: String?
        /// By surface: `hae-NAME` for an automation, `import` for the node's own home.
        public var surfaces: [String: Surface] = [:]
        public var folder = Folder()
        public var stoppedAt: Double?
        public init() {}
    }

    public struct Surface: Codable, Sendable, Equatable {
        public var lastCaptureAt: Double?
        public var lastObservationId: Int64?
        public var captures = 0
        public var duplicates = 0
        public var refused = 0
        public var lastRefusal: String?
        public var lastSyncAt: Double?
        public var lastSyncSequence: Int?
        public var lastSyncError: String?
        public var syncFailures = 0
        public var nextSyncAttemptAt: Double?
        public var enrolled: Bool?
        public init() {}
    }

    public struct CertificateReissue: Codable, Sendable, Equatable {
        public var at: Double
        public var reason: String
        public var previousFingerprint: String?
        public var previousExpiresAt: Double?
        public var previousKept: String
        public init(at: Double, reason: String, previousFingerprint: String?, previousExpiresAt: Double?, previousKept: String) {
            self.at = at
            self.reason = reason
            self.previousFingerprint = previousFingerprint
            self.previousExpiresAt = previousExpiresAt
            self.previousKept = previousKept
        }
    }

    public struct Folder: Codable, Sendable, Equatable {
        public var imported = 0
        public var failed = 0
        public var lastImported: String?
        public var lastFailed: String?
        public var lastFailure: String?
        public var lastCheckAt: Double?
        public init() {}
    }

    public let path: String
    private let state: Mutex<Snapshot>

    public init(path: String, initial: Snapshot) {
        self.path = path
        state = Mutex(initial)
        write(initial)
    }

    /// Changes the status and writes it out.
    public func update(now: Double, _ body: (inout Snapshot) -> Void) {
        let snapshot = state.withLock { s -> Snapshot in
            body(&s)
            s.updatedAt = now
            return s
        }
        write(snapshot)
    }

    public var snapshot: Snapshot { state.withLock { $0 } }

    /// The status a running (or stopped) `hp-node serve` left at `path`, nil when none.
    public static func read(path: String) -> Snapshot? {
        guard let data = FileManager.default.contents(atPath: path) else { return nil }
        let d = JSONDecoder()
        d.keyDecodingStrategy = .convertFromSnakeCase
        return try? d.decode(Snapshot.self, from: data)
    }

    private func write(_ s: Snapshot) {
        let e = JSONEncoder()
        e.outputFormatting = [.sortedKeys, .prettyPrinted]
        e.keyEncodingStrategy = .convertToSnakeCase
        guard let data = try? e.encode(s) else { return }
        // Best effort: the status is for people; a full disk shows up in the log instead.
        try? DurableFile.put(path, [UInt8](data))
    }
}
