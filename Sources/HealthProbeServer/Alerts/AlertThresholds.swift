import Foundation
import HealthProbeArchive
import HealthProbeCanonical

/// The server-level thresholds and the verification schedule: the `alerts` object of the
/// config file (docs/alerts.md). Every key is optional, defaults as documented, each range-checked.
/// `{"disk_free_gib": 1, "disk_free_percent": 5, "certificate_warning_days": 14,
///   "delivery_failing_hours": 24, "backup_failing_hours": 24, "verify_quick_hours": 24, "verify_full_hours": 168,
///   "evaluate_seconds": 60}`
public struct AlertThresholds: Sendable, Equatable {
    /// `disk_space_low` when less than this many GiB are free (0: only the percentage counts)...
    public var diskFreeGiB: Double = 1
    /// ...or less than this percentage of the file system (0: only the GiB count).
    public var diskFreePercent: Double = 5
    /// `certificate_expiring` when the TLS certificate ends within this many days.
    public var certificateWarningDays: Double = 14
    /// `delivery_failing` when a message has waited this many hours after a failed attempt.
    public var deliveryFailingHours: Double = 24
    /// `backup_failing` when a bundle has waited this many hours for object storage.
    public var backupFailingHours: Double = 24
    /// Scheduled `verify --quick` of each chain every this many hours...
    public var verifyQuickHours: Double = 24
    /// ...and `--full` every this many (at least `verify_quick_hours`).
    public var verifyFullHours: Double = 168
    /// Every chain's conditions are evaluated, and what is due delivered, every this many seconds.
    public var evaluateSeconds: Double = 60

    /// Each key, its property and its allowed range.
    public static var settings: [(key: String, path: WritableKeyPath<AlertThresholds, Double>, range: ClosedRange<Double>)] {
        [("disk_free_gib", \.diskFreeGiB, 0...1024),
         ("disk_free_percent", \.diskFreePercent, 0...50),
         ("certificate_warning_days", \.certificateWarningDays, 1...365),
         ("delivery_failing_hours", \.deliveryFailingHours, 1...720),
         ("backup_failing_hours", \.backupFailingHours, 1...720),
         ("verify_quick_hours", \.verifyQuickHours, 1...720),
         ("verify_full_hours", \.verifyFullHours, 1...8760),
         ("evaluate_seconds", \.evaluateSeconds, 5...3600)]
    }
    public static var keys: Set<String> { Set(settings.map(\.key)) }

    public init() {}

    /// The server-level conditions for `dataDirectory` with these thresholds.
    public func serverConditions(dataDirectory: String, certificateFile: String?) -> ServerConditions {
        var c = ServerConditions(dataDirectory: dataDirectory, certificateFile: certificateFile)
        // Within the parsed range whatever a caller set, so the conversion cannot trap.
        let gib = diskFreeGiB.isFinite ? min(max(diskFreeGiB, 0), 1024) : 1
        c.minimumFreeBytes = Int64((gib * 1_073_741_824).rounded())
        c.minimumFreeFraction = diskFreePercent / 100
        c.certificateWarning = certificateWarningDays * 86400
        c.deliveryFailingAfter = deliveryFailingHours * 3600
        c.offsiteFailingAfter = backupFailingHours * 3600
        return c
    }

    /// The verification schedule for `store` with these intervals.
    public func scheduledVerify(store: ServerStore) -> ScheduledVerify {
        ScheduledVerify(store: store, quickEvery: verifyQuickHours * 3600, fullEvery: verifyFullHours * 3600)
    }

    /// The `alerts` object of config file `file`: unknown keys, wrong types and values out of
    /// range are refused with the key and the allowed range.
    static func parse(_ value: JSONValue, file: String) throws -> AlertThresholds {
        guard case .object(let o) = value else { throw ArchiveError(.invalidInput, "config file \(file): \"alerts\" must be a JSON object") }
        if let unknown = o.keys.filter({ !keys.contains($0) }).sorted().first {
            throw ArchiveError(.invalidInput, "config file \(file): unknown key \"alerts.\(unknown)\" (known: \(keys.sorted().joined(separator: ", ")))")
        }
        var t = AlertThresholds()
        for (key, path, range) in settings {
            switch o[key] {
            case nil, .null?: continue
            case .number(let d)? where d.isFinite && range.contains(d): t[keyPath: path] = d
            default:
                throw ArchiveError(.invalidInput, "config file \(file): \"alerts.\(key)\" must be a number from \(Self.text(range.lowerBound)) to \(Self.text(range.upperBound))")
            }
        }
        guard t.verifyFullHours >= t.verifyQuickHours else {
            throw ArchiveError(.invalidInput, "config file \(file): \"alerts.verify_full_hours\" (\(Self.text(t.verifyFullHours))) must be at least \"alerts.verify_quick_hours\" (\(Self.text(t.verifyQuickHours)))")
        }
        return t
    }

    static func text(_ d: Double) -> String { String(format: "%g", d) }
}
