import Foundation

/// The repository this test build came from.
public let repositoryRoot: URL = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

/// `Protocol/vectors/<name>` in the repository.
public func vectorURL(_ name: String) -> URL {
    repositoryRoot.appendingPathComponent("Protocol/vectors/\(name)")
}

/// The public Apple Health fixtures in `../shared/fixtures/apple-health/`, beside the
/// repository in CI but not in a user's clone: tests that read them are enabled only
/// when the directory exists (`.enabled(if: SharedFixtures.available, …)`), and the
/// project's own generated exports (`QuirkyExport`) cover the same quirks.
public enum SharedFixtures {
    public static let directory = repositoryRoot.deletingLastPathComponent().appendingPathComponent("shared/fixtures/apple-health")
    public static var available: Bool {
        var isDirectory: ObjCBool = false
        return FileManager.default.fileExists(atPath: directory.path, isDirectory: &isDirectory) && isDirectory.boolValue
    }
    /// Why the tests that need them are skipped.
    public static let skipReason: String = "needs ../shared/fixtures/apple-health beside the repository (present in CI, not in a lone clone)"
    /// `../shared/fixtures/apple-health/<name>`.
    public static func path(_ name: String) -> String { directory.appendingPathComponent(name).path }
}

/// Whether an executable is on `PATH`, for tests enabled only where a tool exists.
public func toolOnPath(_ name: String) -> Bool {
    let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
    return path.split(separator: ":").contains { FileManager.default.isExecutableFile(atPath: "\($0)/\(name)") }
}
