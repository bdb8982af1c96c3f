import Foundation
import HealthProbeArchive
import HealthProbeCanonical
import HealthProbeProtocol

/// The lines of a received bundle file, whichever form it has: gzip members as the
/// parts arrived (`GzipParts`, what the server writes), or the bundle's lines
/// themselves (bundles kept before 2026-11-25, and bundle files given to tools).
public struct StoredBundleLines: Sequence, IteratorProtocol, LineEndReporting {
    // One of the two (optionals, not an enum with payloads: `plain?.next()` mutates in place).
    private let gzip: GzipParts.Lines?
    private var plain: FileLines?

    public init(path: String) throws {
        // The file is opened once when it holds gzip members (what the server keeps).
        let members = try GzipParts.Lines(path: path)
        if members.startsAsGzip {
            gzip = members
            plain = nil
        } else {
            gzip = nil
            plain = try FileLines(path: path)
        }
    }

    /// Whether the file holds gzip members.
    public var isGzip: Bool { gzip != nil }

    /// Why the lines ended early (a damaged member), if they did.
    public var failure: GzipParts.ReadError? { gzip?.failure }

    /// The file ended inside the last line returned (no newline after it).
    public var lastLineUnterminated: Bool { gzip?.lastLineUnterminated ?? plain?.lastLineUnterminated ?? false }

    public mutating func next() -> [UInt8]? {
        if let gzip { return gzip.next() }
        return plain?.next()
    }
}
