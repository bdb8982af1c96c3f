import Foundation
import Logging

/// Logs go to stderr at `HP_LOG_LEVEL` (default `warning`). Log messages
/// carry ids and counts only, never health values.
enum NodeLogging {
    static let bootstrapped: Bool = {
        let level = ProcessInfo.processInfo.environment["HP_LOG_LEVEL"].flatMap(Logger.Level.init(rawValue:)) ?? .warning
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        return true
    }()

    static func logger() -> Logger {
        _ = bootstrapped
        return Logger(label: "healthprobe.node")
    }
}
