import Foundation
import GRDB

/// The two ways code outside the archive reaches its database other than named methods.
extension Archive {
    /// One read transaction for code that streams through the archive's own query
    /// functions (the node's outbox builds a bundle with `ObservationBundleBuilder`
    /// while it deflates the parts). No SQL text goes through it: add a named method instead.
    public func readSnapshot<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        try await writer.read(body)
    }

    /// The database itself, for the benchmark and fuzz harnesses only (they time and
    /// count with SQL of their own). Product code uses the archive's named methods.
    public var unsafeBenchmarkAccess: any DatabaseWriter { writer }
}
