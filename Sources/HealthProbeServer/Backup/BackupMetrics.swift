import Prometheus

/// What an administrator watches to know the backups happen (docs/operations.md,
/// "Monitoring"): scheduled backups and uploads to object storage, as counts and Unix
/// times only.
extension ServerMetrics {
    static var backupsName: MetricNameDescriptor { name("backups", "total", "Scheduled backups, by result.") }
    static var offsiteUploadsName: MetricNameDescriptor { name("offsite_uploads", "total", "Bundle uploads to object storage (each read back and re-hashed), by result.") }

    /// A scheduled backup was written (`ok`) or failed, at Unix time `now`.
    func backup(ok: Bool, now: Double) {
        registry.makeCounter(descriptor: Self.backupsName, labels: [("result", ok ? "written" : "failed")]).increment()
        if ok {
            registry.makeGauge(descriptor: Self.name("backup_last_written", "timestamp_seconds", "When the last scheduled backup was written (Unix time).")).set(now)
        }
    }

    /// A scheduled backup not taken: the data directory is a copy not adopted (`RestoredCopy`).
    func backupPaused() {
        registry.makeCounter(descriptor: Self.backupsName, labels: [("result", "paused")]).increment()
    }

    /// An upload round: bundles uploaded and failed, the bundles still queued, at Unix time `now`.
    func offsiteRound(uploaded: Int, failed: Int, pending: Int?, now: Double) {
        registry.makeCounter(descriptor: Self.offsiteUploadsName, labels: [("result", "uploaded")]).increment(by: Int64(uploaded))
        registry.makeCounter(descriptor: Self.offsiteUploadsName, labels: [("result", "failed")]).increment(by: Int64(failed))
        if let pending {
            registry.makeGauge(descriptor: Self.name("offsite_pending", "", "Accepted bundles not yet in object storage.")).set(Int64(pending))
        }
        if uploaded > 0 {
            registry.makeGauge(descriptor: Self.name("offsite_last_upload", "timestamp_seconds", "When a bundle was last uploaded (Unix time).")).set(now)
        }
    }

    /// A registry snapshot was uploaded at Unix time `now`.
    func offsiteSnapshot(now: Double) {
        registry.makeGauge(descriptor: Self.name("offsite_last_snapshot", "timestamp_seconds", "When the registry was last uploaded (Unix time).")).set(now)
    }
}
