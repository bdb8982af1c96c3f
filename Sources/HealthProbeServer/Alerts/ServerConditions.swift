import Foundation
import HealthProbeCanonical
import X509

/// Server-level conditions, told to admins only: the data directory's disk nearly full, the
/// server's TLS certificate expiring, alert messages undelivered for too long, backups that
/// stopped. Reads the file system and the certificate; the outbox's oldest failing message
/// and the oldest bundle waiting for object storage come from the registry.
public struct ServerConditions: Sendable {
    /// Free and total bytes of a file system.
    public typealias Space = (free: Int64, total: Int64)

    public var dataDirectory: String
    /// The server's certificate (PEM); nil: not checked.
    public var certificateFile: String?
    /// Low when less than this is free...
    public var minimumFreeBytes: Int64 = 1 << 30
    /// ...or less than this fraction of the file system.
    public var minimumFreeFraction = 0.05
    /// Expiring when it ends within this many seconds.
    public var certificateWarning: Double = 14 * 86400
    /// Failing when a message has waited undelivered, after a failed attempt, this long.
    public var deliveryFailingAfter: Double = 86400
    /// Scheduled backups (`backup_to`, `backup_interval_hours` in seconds); nil: none configured.
    /// Failing when the newest complete one is older than two intervals and an hour.
    public var scheduledBackups: (directory: String, interval: Double)?
    /// When the server started: its first scheduled backup is due one interval later.
    public var startedAt: Double = 0
    /// Whether bundles are copied to object storage (`s3_*`): only then does a waiting one count.
    public var offsiteUploads = false
    /// Failing when a bundle has waited this long for object storage.
    public var offsiteFailingAfter: Double = 86400
    /// The shortest time between two registry snapshots (`s3_snapshot_seconds`): a snapshot
    /// due may wait that long on a server that works.
    public var offsiteSnapshotInterval: Double = 300
    /// How free space is read (injected in tests).
    public var space: @Sendable (String) -> Space? = ServerConditions.fileSystemSpace

    public init(dataDirectory: String, certificateFile: String?) {
        self.dataDirectory = dataDirectory
        self.certificateFile = certificateFile
    }

    /// The conditions firing at `now`, keyed by `AlertCondition.serverKey`.
    /// `oldestPendingUpload`: when the bundle waiting longest for object storage was queued.
    /// `snapshotDue`: since when a registry snapshot has been due without reaching the bucket,
    /// and for how many seconds of that the server was serving.
    public func findings(now: Double, oldestFailingMessage: Double?, oldestPendingUpload: Double? = nil,
                         snapshotDue: (since: Double, served: Double)? = nil) -> [AlertFinding] {
        var out: [AlertFinding] = []
        func finding(_ c: AlertCondition, _ detail: String) {
            out.append(AlertFinding(chain: AlertCondition.serverKey, condition: c, detail: detail, page: "/admin"))
        }
        if let s = space(dataDirectory), s.total > 0 {
            let fraction = Double(s.free) / Double(s.total)
            if s.free < minimumFreeBytes || fraction < minimumFreeFraction {
                finding(.diskSpaceLow, String(format: "%.1f GiB free (%.0f%%) for the data directory", Double(s.free) / 1_073_741_824, fraction * 100))
            }
        }
        if let certificateFile {
            if let end = Self.notValidAfter(certificateFile) {
                if end - now < certificateWarning {
                    finding(.certificateExpiring, end <= now ? "the TLS certificate expired at \(Self.day(end))"
                                                             : "the TLS certificate expires at \(Self.day(end)), in \(Int((end - now) / 86400)) day(s)")
                }
            } else {
                finding(.certificateExpiring, "the TLS certificate cannot be read")
            }
        }
        if let oldest = oldestFailingMessage, now - oldest > deliveryFailingAfter {
            finding(.deliveryFailing, "a message has waited undelivered since \(Self.day(oldest)) (the server's log says why)")
        }
        var backups: [String] = []
        if scheduledBackups != nil || offsiteUploads, let notice = RestoredCopy.notice(dataDirectory, "scheduled backups and uploads are", bucket: offsiteUploads) {
            backups.append(notice)
        }
        if let (directory, interval) = scheduledBackups, interval > 0 {
            let newest = Self.newestBackup(in: directory)
            if now - (newest ?? startedAt) > 2 * interval + 3600 {
                backups.append(newest.map { "the newest scheduled backup in \(directory) was written at \(Self.day($0)); one is due every \(Self.hours(interval))" }
                               ?? "no scheduled backup was written in \(directory) since the server started at \(Self.day(startedAt)); one is due every \(Self.hours(interval))")
            }
        }
        if offsiteUploads, let oldest = oldestPendingUpload, now - oldest > offsiteFailingAfter {
            backups.append("a bundle accepted at \(Self.day(oldest)) is still not in object storage")
        }
        // Counted in the time the server was serving (a server stopped long with one due takes it
        // at its start; one that restarts often adds up its runs), after the interval a working
        // server may wait.
        if offsiteUploads, let due = snapshotDue, due.served > offsiteFailingAfter + offsiteSnapshotInterval {
            backups.append("no registry snapshot (people, devices, credentials) has reached object storage since one was due at \(Self.day(due.since))"
                           + String(format: " (%.1f hours of serving since)", due.served / 3600))
        }
        if !backups.isEmpty { finding(.backupFailing, backups.joined(separator: "; ") + " (the server's log says why)") }
        return out
    }

    /// When the newest complete backup in `directory` was complete (the `finished_at` of its
    /// manifest, which is written last; `created_at` in older ones); nil when it holds none.
    /// Counted from the end, a backup that runs long is not taken for a late one.
    static func newestBackup(in directory: String) -> Double? {
        let fm = FileManager.default
        return ((try? fm.contentsOfDirectory(atPath: directory)) ?? []).compactMap { name -> Double? in
            let manifest = directory + "/" + name + "/" + ServerBackup.manifestName
            guard let size = (try? fm.attributesOfItem(atPath: manifest))?[.size] as? Int, size < 1 << 24,
                  let data = fm.contents(atPath: manifest),
                  let object = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] else { return nil }
            return ((object["finished_at"] as? NSNumber) ?? (object["created_at"] as? NSNumber))?.doubleValue
        }.filter(\.isFinite).max()
    }

    static func hours(_ seconds: Double) -> String {
        let h = seconds / 3600
        return h == h.rounded() ? "\(Int(h)) hour(s)" : String(format: "%.1f hours", h)
    }

    /// The end of a PEM certificate's validity (Unix seconds), nil if unreadable.
    static func notValidAfter(_ path: String) -> Double? {
        guard let pem = try? String(contentsOfFile: path, encoding: .utf8), let cert = try? Certificate(pemEncoded: pem) else { return nil }
        return cert.notValidAfter.timeIntervalSince1970
    }

    static func day(_ t: Double) -> String {
        guard t.isFinite, abs(t) < 1e12 else { return "?" }
        return CanonicalDate.string(t)
    }

    /// Free and total bytes of the file system holding `path`.
    public static func fileSystemSpace(_ path: String) -> Space? {
        guard let a = try? FileManager.default.attributesOfFileSystem(forPath: path),
              let free = (a[.systemFreeSize] as? NSNumber)?.int64Value, let total = (a[.systemSize] as? NSNumber)?.int64Value else { return nil }
        return (free, total)
    }
}
