import Foundation
import GRDB

extension ArchiveCache {
    /// Remembers an integrity check's outcome (`ok` or `problem`) in the archive health row.
    public func recordIntegrityCheck(at now: Double, ok: Bool) throws {
        try write { db in
            try db.execute(sql: "UPDATE cached_archive_health SET last_integrity_check_at = ?, last_integrity_status = ? WHERE id = 1",
                           arguments: [now, ok ? "ok" : "problem"])
        }
    }
}
