import Foundation
import GRDB

/// A profiling aid for benchmarks: with `HP_SQL_SLOW_MS=<milliseconds>` set,
/// every statement that runs longer prints its duration and its SQL text (never
/// its bound values, which may be health data) to standard error.
enum SlowStatementLog {
    static let thresholdNanoseconds: UInt64? = ProcessInfo.processInfo.environment["HP_SQL_SLOW_MS"]
        .flatMap { Double($0) }.flatMap { $0 >= 0 && $0 < 1e6 ? UInt64($0 * 1e6) : nil }

    static func install(_ db: Database) {
        guard let limit = thresholdNanoseconds else { return }
        db.trace(options: .profile) { event in
            guard case .profile(let statement, let duration) = event else { return }
            let ns = duration * 1e9
            guard ns >= Double(limit) else { return }
            let sql = statement.sql.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }.joined(separator: " ")
            FileHandle.standardError.write(Data(String(format: "sql %.1f ms: %@\n", ns / 1e6, String(sql.prefix(300))).utf8))
        }
    }
}
