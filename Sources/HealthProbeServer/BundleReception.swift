import Foundation
import HealthProbeProtocol
import NIOCore

/// A bundle being received into a quarantine file (used by one session at a
/// time; a reference, so that its buffer moves to the thread inflating a part
/// without being copied).
final class BundleReception: @unchecked Sendable {
    let sequence: Int
    let manifestHash: String
    let parts: Int
    let uncompressedSize: Int
    let itemCount: Int
    let path: String
    /// Lines received so far (newlines, plus an unterminated last line at the end).
    var lines = 0
    var endsWithNewline = true
    var nextPart = 0
    var received = 0
    let handle: FileHandle
    /// Each part is inflated into this one buffer (its capacity reused).
    var inflated: [UInt8] = []

    init(begin: BundleBegin, directory: String) throws {
        sequence = begin.sequence
        manifestHash = begin.manifestHash
        parts = begin.parts
        itemCount = begin.itemCount
        uncompressedSize = begin.uncompressedSize
        path = directory + "/\(UUID().uuidString).jsonl"
        guard FileManager.default.createFile(atPath: path, contents: nil), let h = FileHandle(forWritingAtPath: path) else {
            throw SyncProtocolError(.storage, "the server cannot write its quarantine file")
        }
        handle = h
    }

    func part(_ payload: ByteBuffer) throws {
        var p = payload
        guard let index: UInt32 = p.readInteger(endianness: .big), let size: UInt32 = p.readInteger(endianness: .big) else {
            throw SyncProtocolError(.malformedFrame, "a BUNDLE_PART frame is shorter than its header")
        }
        guard Int(index) == nextPart, nextPart < parts else {
            throw SyncProtocolError(.malformedFrame, "BUNDLE_PART \(index) arrived; expected part \(nextPart) of \(parts)")
        }
        try p.withUnsafeReadableBytes { try BundlePartCodec.inflate($0, declaredSize: Int(size), into: &inflated) }
        received += inflated.count
        lines += inflated.withUnsafeBufferPointer { Self.newlines(in: $0) }
        if let last = inflated.last { endsWithNewline = last == 0x0A }
        guard received <= uncompressedSize else {
            throw SyncProtocolError(.inflateLimit, "the parts hold more than the \(uncompressedSize) bytes BUNDLE_BEGIN declared")
        }
        do { try handle.write(contentsOf: inflated) } catch {
            throw SyncProtocolError(.storage, "the server cannot write its quarantine file (disk full?)")
        }
        nextPart += 1
    }

    func end(_ e: BundleEnd) throws {
        try? handle.close()
        inflated = []
        guard e.sequence == sequence, e.manifestHash == manifestHash else {
            throw SyncProtocolError(.malformedFrame, "BUNDLE_END (sequence \(e.sequence)) does not match its BUNDLE_BEGIN (sequence \(sequence))")
        }
        guard nextPart == parts, received == uncompressedSize else {
            throw SyncProtocolError(.malformedFrame, "the bundle ended after \(nextPart) of \(parts) parts and \(received) of \(uncompressedSize) bytes")
        }
        // Header, items, trailer: one line each.
        let total = lines + (endsWithNewline ? 0 : 1)
        guard total == itemCount + 2 else {
            throw SyncProtocolError(.malformedFrame, "BUNDLE_BEGIN declared \(itemCount) items; the bundle holds \(max(total - 2, 0)) (\(total) lines)")
        }
    }

    /// How many LF bytes `bytes` holds.
    static func newlines(in bytes: UnsafeBufferPointer<UInt8>) -> Int {
        guard var p = bytes.baseAddress.map(UnsafeRawPointer.init) else { return 0 }
        let end = p + bytes.count
        var n = 0
        while p < end, let hit = memchr(p, 0x0A, end - p) {
            n += 1
            p = UnsafeRawPointer(hit) + 1
        }
        return n
    }
}
