#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Splits bytes that arrive in buffers into lines (the newline is not part of a line):
/// the one loop behind a bundle's lines read from a plain file and from gzip members.
public enum LineSplitter {
    /// Appends `buffer[index..<end]` up to the first newline to `line` and moves `index`
    /// past what it took (the newline included). True when a newline ended the line;
    /// false when the buffer ran out first (the line goes on in the next buffer).
    @inline(__always)
    public static func take(from buffer: [UInt8], end: Int, index: inout Int, into line: inout [UInt8]) -> Bool {
        let start = index
        let found: Int? = buffer.withUnsafeBufferPointer { buf in
            guard let base = buf.baseAddress, start < end, let p = memchr(base + start, 0x0A, end - start) else { return nil }
            return UnsafePointer<UInt8>(p.assumingMemoryBound(to: UInt8.self)) - base
        }
        if let nl = found {
            line.append(contentsOf: buffer[start..<nl])
            index = nl + 1
            return true
        }
        if start < end { line.append(contentsOf: buffer[start..<end]) }
        index = end
        return false
    }

    /// How many newlines (LF bytes) `bytes` holds.
    public static func newlines(in bytes: UnsafeBufferPointer<UInt8>) -> Int {
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

/// A line iterator that tells whether the last line it returned had no newline after
/// it (the input ended inside it). Every line of a bundle ends with a newline, the
/// last one's too: a verifier asks its lines this once they end.
public protocol LineEndReporting {
    var lastLineUnterminated: Bool { get }
}

/// A line source whose reader may be waiting for lines still to come: `stopLines` ends
/// that wait (and the lines), so a reader that stops early can be joined at once.
public protocol StoppableLines {
    func stopLines()
}
