import Foundation

/// Points where a crash test stops the server on purpose. Each is off unless its
/// environment variable is set when the process starts; a server people run never has them.
enum Failpoints {
    /// `HP_FAILPOINT_BEFORE_COMMIT=PATH`: once a bundle is applied, inside its transaction and
    /// before the commit, create the file PATH and wait 120 s (a test kills the server then:
    /// the kill provably lands inside the transaction).
    static let beforeCommitMarker: String? = ProcessInfo.processInfo.environment["HP_FAILPOINT_BEFORE_COMMIT"].flatMap { $0.isEmpty ? nil : $0 }

    static func beforeCommit() {
        guard let marker = beforeCommitMarker else { return }
        FileManager.default.createFile(atPath: marker, contents: Data())
        Thread.sleep(forTimeInterval: 120)
    }

    /// `HP_FAILPOINT_LISTEN_AFTER=SECONDS`: the sync listener starts that many seconds late
    /// (a test sees what the server's other services do before it).
    static let listenDelay: Double? = ProcessInfo.processInfo.environment["HP_FAILPOINT_LISTEN_AFTER"].flatMap(Double.init).flatMap { $0 > 0 && $0 <= 60 ? $0 : nil }

    /// `HP_FAILPOINT_VERIFY_HOLD=SECONDS`: a verification waits that long once it has taken the
    /// serving lock (or found it held), before it reads anything.
    static let verifyHold: Double? = ProcessInfo.processInfo.environment["HP_FAILPOINT_VERIFY_HOLD"].flatMap(Double.init).flatMap { $0 > 0 && $0 <= 60 ? $0 : nil }
}
