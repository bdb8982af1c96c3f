import Testing
@testable import HealthProbeServer

/// The config file's durations: positive and bounded, so that what the server makes of them
/// (milliseconds, a `Duration`, whole hours) always holds them.
@Suite("Durations from the config file")
struct ServerConfigDurationTests {
    /// The config file `text`, loaded as `AlertThresholdsTests` loads it.
    func load(_ text: String) throws -> ServerConfig { try AlertThresholdsTests().load(text) }

    @Test("each duration key takes values up to its bound and refuses one past it (1e300 among them), naming the key", arguments: [
        ("hello_timeout_seconds", 31_536_000.0), ("idle_timeout_seconds", 31_536_000), ("backup_interval_hours", 87_600), ("s3_snapshot_seconds", 31_536_000),
    ])
    func bounded(key: String, bound: Double) throws {
        // The S3 keys come as a set: the snapshot interval alone is read without them.
        _ = try load("{\"\(key)\": \(bound)}")
        for past in [bound + 1, 1e15, 1e300] {
            #expect {
                try load("{\"\(key)\": \(past)}")
            } throws: { "\($0)".contains("\"\(key)\" must be at most \(Int(bound))") }
        }
    }
}
