import ArgumentParser
import Foundation
import HealthProbeArchive
import HealthProbeCanonical

/// Dates given on command lines: `2025-01-31`, `2025-01-31T12:00:00Z` or with milliseconds, all UTC.
public enum CLIDate {
    public static func parse(_ text: String, option: String) throws -> Double {
        if let d = CanonicalDate.parse(text) { return d }
        let f = ISO8601DateFormatter()
        if let d = f.date(from: text) { return d.timeIntervalSince1970 }
        f.formatOptions = [.withFullDate]
        if let d = f.date(from: text) { return d.timeIntervalSince1970 }
        throw ValidationError("\(option) \(text): expected a UTC date like 2025-01-31 or 2025-01-31T12:00:00Z")
    }
}
