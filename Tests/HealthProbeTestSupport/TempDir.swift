import Foundation
import HealthProbeArchive

/// A temporary directory, removed with everything in it when the value is released.
public final class TempDir: @unchecked Sendable {
    public let path = NSTemporaryDirectory() + "hp-test-dir-" + UUID().uuidString
    public init() {
        // Tests open archives in these directories: the executables' settings first, as they do.
        ProcessSettings.apply()
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }
    deinit { try? FileManager.default.removeItem(atPath: path) }
    public func file(_ name: String) -> String { path + "/" + name }
}
