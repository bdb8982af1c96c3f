import Foundation
import HealthProbeArchive
import HealthProbeCanonical

/// A data directory `hp-server restore` made (or one copied from another directory:
/// `HomeDirectory`) is a copy until an administrator says it is
/// the server's new home (`hp-server adopt`): until then it writes no scheduled backup and
/// uploads nothing to object storage, even with the old server's `config.json`. A restore
/// drill's copy given the live config would otherwise put its (older) registry into the live
/// bucket as the newest snapshot, which a later restore would take, bringing back devices
/// revoked since.
public enum RestoredCopy {
    static let fileName = "restored-copy"

    static func path(_ root: String) -> String { root + "/" + fileName }

    /// Marks `root` as a copy restored from `source` at `now`.
    static func mark(_ root: String, source: String, now: Double) throws {
        try mark(root, what: "restored from \(source) at \(CanonicalDate.string(now))")
    }

    /// Marks `root` as a copy: `what` says which ("restored from ...", "a backup of ...").
    static func mark(_ root: String, what: String) throws {
        let text = "\(what). Scheduled backups and uploads to object storage are paused until `hp-server adopt --data DIR` on the server's new home; a drill's copy leaves them paused.\n"
        try DataDirectory.writeMarker(root, fileName, text)
    }

    /// What `root` was restored or copied from, while it is an unadopted copy; nil otherwise.
    /// A restore's file decides by its presence (an unreadable one pauses all the same); without
    /// it, a directory whose home record names another directory is a copy too (`HomeDirectory`).
    /// `bucket`: also a second writer found in the bucket prefix (`SnapshotWriters`), which pauses uploads, not backups.
    public static func paused(_ root: String, bucket: Bool = true) -> String? {
        guard FileManager.default.fileExists(atPath: path(root)) else {
            return (bucket ? SnapshotWriters.conflict(root) : nil) ?? HomeDirectory.copiedFrom(root)
        }
        guard let text = try? String(contentsOfFile: path(root), encoding: .utf8) else { return "restored (\(fileName) cannot be read)" }
        guard let cut = text.range(of: ". Scheduled") else { return String(text.prefix(300)) }
        return String(text[..<cut.lowerBound].prefix(300))
    }

    /// Makes `root` the server's home: its directory is recorded as the home (`HomeDirectory`)
    /// and backups and uploads resume. Returns false when it was not a paused copy.
    public static func adopt(_ root: String) throws -> Bool {
        guard paused(root) != nil else {
            try HomeDirectory.refresh(root)
            return false
        }
        // The bucket prefix first (a serving server looks every round): the old names go, the
        // conflict file goes and a takeover is asked for; then the home; the restore's mark last.
        try DeviceRegistry(path: root + "/server.sqlite").forgetOffsiteSnapshots()
        try SnapshotWriters.requestTakeover(root)
        try HomeDirectory.record(root)
        if FileManager.default.fileExists(atPath: path(root)) { try FileManager.default.removeItem(atPath: path(root)) }
        return true
    }

    /// `adopt` of a data directory that is no copy, whose server has not looked at its bucket
    /// prefix since a second writer marked it (it looks every `s3_snapshot_seconds`): for a
    /// conflict, the takeover is asked for all the same, as for a paused server. Another
    /// server's takeover is only returned: this one is the copy, or the takeover was a mistake
    /// to be undone once this one has paused (adopt then takes it back). Throws when the
    /// prefix cannot be read.
    public static func answerWriterMark(_ store: ServerStore, objects: ObjectStore) async throws -> OffsiteUploader.WriterMarkState {
        let uploader = OffsiteUploader(store: store, registry: try store.registry(), objects: objects)
        let state = try await uploader.writerMarkState()
        if case .conflict = state { try SnapshotWriters.requestTakeover(store.root) }
        return state
    }

    /// The sentence for logs and alerts while `root` is a paused copy.
    static func notice(_ root: String, _ what: String, bucket: Bool = true) -> String? {
        // A second writer's text says itself what is paused and what to do.
        if bucket, !FileManager.default.fileExists(atPath: path(root)), let conflict = SnapshotWriters.conflict(root) { return conflict }
        return paused(root, bucket: false).map { "\(what) paused: this data directory is a copy (\($0)); on the server's new home run `hp-server adopt --data \(root)`" }
    }
}
