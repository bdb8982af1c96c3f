import Foundation
import GRDB

extension Archive {
    /// Copies this archive's whole content over `other`'s (SQLite's online backup).
    public func copy(over other: Archive) throws {
        try writer.backup(to: other.writer)
    }

    /// Observations, bundle log rows and samples together: 0 in an archive nothing was stored in.
    public func storedRowCount() throws -> Int {
        try writer.read { db in
            try Int.fetchOne(db, sql: "SELECT (SELECT count(*) FROM observations) + (SELECT count(*) FROM bundle_log) + (SELECT count(*) FROM samples)") ?? 0
        }
    }
}
