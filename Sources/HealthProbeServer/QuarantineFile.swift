import Foundation
import HealthProbeCanonical
import HealthProbeProtocol
import NIOCore

/// The file a bundle is received into before it is verified (`<data>/quarantine/`).
/// The session state machine decides which parts arrive and when the bundle is
/// complete; this inflates each part (its size, its zlib data, its lines are
/// checked as it arrives) and writes it as it arrived, deflated, one gzip member
/// per part (`GzipParts`): the file is kept as the bundle once applied. Used by one
/// session at a time; a reference, so that its buffers move to the thread doing
/// the work without being copied.
/// `@unchecked Sendable`: one session uses it, one call at a time (each awaited before the next); `path` and `handle` are `let`.
public final class QuarantineFile: @unchecked Sendable {
    public let path: String
    private let handle: FileHandle
    /// Each part is inflated into this one buffer, and its member built in the other (their capacity reused).
    private var inflated: [UInt8] = [], member: [UInt8] = []
    private var open = true
    /// The bundle's first line (its header), kept from the first part when it ends
    /// there and is at most `maxHeader` bytes; nil otherwise (then read from the file).
    public private(set) var header: [UInt8]?
    /// Whether the next part written is the bundle's first.
    private var firstPart = true
    /// A header is a few hundred bytes (Protocol/bundles.md); longer ones are read back.
    static let maxHeader = 4096

    /// Creates a new, empty file in `directory`.
    public init(directory: String) throws {
        path = directory + "/\(UUID().uuidString).jsonl.gz"
        guard FileManager.default.createFile(atPath: path, contents: nil), let h = FileHandle(forWritingAtPath: path) else {
            throw SyncProtocolError(.storage, "the server cannot write its quarantine file")
        }
        handle = h
    }

    deinit { if open { try? handle.close() } }

    /// Inflates `part` (exactly its declared size, or an error) and appends its
    /// member; returns how many LF bytes it held and its last byte.
    public func write(_ part: BundlePart) throws -> (newlines: Int, lastByte: UInt8?) {
        try part.compressed.withUnsafeReadableBytes {
            try BundlePartCodec.inflate($0, declaredSize: part.declaredSize, into: &inflated)
        }
        let newlines = inflated.withUnsafeBufferPointer { LineSplitter.newlines(in: $0) }
        if firstPart, let nl = inflated.prefix(Self.maxHeader + 1).firstIndex(of: 0x0A) { header = Array(inflated[..<nl]) }
        firstPart = false
        member.removeAll(keepingCapacity: true)
        try part.compressed.withUnsafeReadableBytes { zlib in
            try inflated.withUnsafeBytes { try GzipParts.appendMember(zlib: zlib, inflated: $0, to: &member) }
        }
        do { try handle.write(contentsOf: member) } catch {
            throw SyncProtocolError(.storage, "the server cannot write its quarantine file (disk full?)")
        }
        return (newlines, inflated.last)
    }

    /// Ends writing (closes the descriptor once); the file stays for verification.
    public func finish() {
        if open { try? handle.close() }
        open = false
        inflated = []
        member = []
    }

    /// Removes the file (a refused, applied or abandoned bundle).
    public func discard() {
        try? FileManager.default.removeItem(atPath: path)
    }
}
