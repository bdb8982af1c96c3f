import Foundation
import HealthProbeCanonical
import HealthProbeProtocol
import NIOCore
import Synchronization

/// The file a bundle is received into before it is verified (`<data>/quarantine/`).
/// The session state machine decides which parts arrive and when the bundle is
/// complete; this inflates each part (its size, its zlib data, its lines are
/// checked as it arrives) and writes it as it arrived, deflated, one gzip member
/// per part (`GzipParts`): the file is kept as the bundle once applied. Used by one
/// session at a time; a reference, so that its buffers move to the thread doing
/// the work without being copied.
public final class QuarantineFile: Sendable {
    public let path: String
    /// What a write changes, under one lock: a session writes one part at a time, so it is
    /// never contended; it makes the file safe to hand between threads all the same.
    private let state: Mutex<State>

    private struct State {
        let handle: FileHandle
        /// Each part is inflated into this one buffer, and its member built in the other (their capacity reused).
        var inflated: [UInt8] = [], member: [UInt8] = []
        var open = true
        var header: [UInt8]?
        /// Whether the next part written is the bundle's first.
        var firstPart = true
    }

    /// The bundle's first line (its header), kept from the first part when it ends
    /// there and is at most `maxHeader` bytes; nil otherwise (then read from the file).
    public var header: [UInt8]? { state.withLock { $0.header } }
    /// A header is a few hundred bytes (Protocol/bundles.md); longer ones are read back.
    static let maxHeader = 4096

    /// Creates a new, empty file in `directory`.
    public init(directory: String) throws {
        path = directory + "/\(UUID().uuidString).jsonl.gz"
        guard FileManager.default.createFile(atPath: path, contents: nil), let h = FileHandle(forWritingAtPath: path) else {
            throw SyncProtocolError(.storage, "the server cannot write its quarantine file")
        }
        state = Mutex(State(handle: h))
    }

    deinit { state.withLock { s in if s.open { try? s.handle.close() } } }

    /// What a part held: its LF bytes, its last byte, the bytes after its last LF (all of
    /// them when it holds none), and with `pieces` its inflated bytes copied in pieces.
    public struct Written: Sendable {
        public var newlines: Int
        public var lastByte: UInt8?
        public var tail: Int
        public var pieces: [[UInt8]]
    }

    /// Inflates `part` (exactly its declared size, or an error) and appends its
    /// member; returns what it held (`Written`), with `pieces` its inflated bytes copied
    /// in pieces of at most that many bytes (cut anywhere), each into a buffer `spare`
    /// gives (an empty one, or one a piece before held).
    public func write(_ part: BundlePart, pieces: Int? = nil, spare: () -> [UInt8] = { [] }) throws -> Written {
        try state.withLock { s throws -> Written in
            try part.compressed.withUnsafeReadableBytes {
                try BundlePartCodec.inflate($0, declaredSize: part.declaredSize, into: &s.inflated)
            }
            let newlines = s.inflated.withUnsafeBufferPointer { LineSplitter.newlines(in: $0) }
            if s.firstPart, let nl = s.inflated.prefix(Self.maxHeader + 1).firstIndex(of: 0x0A) { s.header = Array(s.inflated[..<nl]) }
            s.firstPart = false
            s.member.removeAll(keepingCapacity: true)
            let inflated = s.inflated
            try part.compressed.withUnsafeReadableBytes { zlib in
                try inflated.withUnsafeBytes { try GzipParts.appendMember(zlib: zlib, inflated: $0, newlines: newlines, to: &s.member) }
            }
            do { try s.handle.write(contentsOf: s.member) } catch {
                throw SyncProtocolError(.storage, "the server cannot write its quarantine file (disk full?)")
            }
            let tail = s.inflated.lastIndex(of: 0x0A).map { s.inflated.count - 1 - $0 } ?? s.inflated.count
            guard let size = pieces.map({ max($0, 1) }) else { return Written(newlines: newlines, lastByte: s.inflated.last, tail: tail, pieces: []) }
            let copies = stride(from: 0, to: s.inflated.count, by: size).map { at -> [UInt8] in
                var piece = spare()
                piece.removeAll(keepingCapacity: true)
                piece.append(contentsOf: s.inflated[at..<min(at + size, s.inflated.count)])
                return piece
            }
            return Written(newlines: newlines, lastByte: s.inflated.last, tail: tail, pieces: copies)
        }
    }

    /// Ends writing (closes the descriptor once); the file stays for verification.
    public func finish() {
        state.withLock { s in
            if s.open { try? s.handle.close() }
            s.open = false
            s.inflated = []
            s.member = []
        }
    }

    /// Removes the file (a refused, applied or abandoned bundle).
    public func discard() {
        try? FileManager.default.removeItem(atPath: path)
    }
}
