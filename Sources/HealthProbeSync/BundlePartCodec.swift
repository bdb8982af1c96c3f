import HPZlib
import Foundation
import HealthProbeArchive

/// zlib (RFC 1950) compression of bundle parts, with the uncompressed size
/// declared and checked before and while inflating (Protocol/README.md section 3).
public enum BundlePartCodec {
    /// Largest uncompressed part: 8 MiB.
    public static let maxPartSize = 8 * 1024 * 1024

    /// The deflate level the sender uses: 1 (fastest). On bundle text it compresses
    /// twice as fast as the default level 6 for about 8% more bytes on the wire
    /// (docs/decisions/2026-11-22-compression-level.md). Receivers accept any level.
    public static let level: Int32 = 1

    /// Compresses `input` into `output` (reused between parts, grown when needed);
    /// returns the compressed length.
    public static func compress(_ input: UnsafeRawBufferPointer, into output: inout [UInt8]) throws -> Int {
        var bound = compressBound(uLong(input.count))
        if output.count < Int(bound) { output = [UInt8](repeating: 0, count: Int(bound)) }
        let rc = output.withUnsafeMutableBufferPointer { o in
            compress2(o.baseAddress, &bound, input.bindMemory(to: UInt8.self).baseAddress, uLong(input.count), Self.level)
        }
        guard rc == Z_OK else { throw SyncProtocolError(.malformedFrame, "zlib compression failed (\(rc))") }
        return Int(bound)
    }

    /// Compresses `bytes` (zlib format, level `level`).
    public static func compress(_ bytes: [UInt8]) throws -> [UInt8] {
        var bound = compressBound(uLong(bytes.count))
        var out = [UInt8](repeating: 0, count: Int(bound))
        let rc = out.withUnsafeMutableBufferPointer { o in
            bytes.withUnsafeBufferPointer { i in compress2(o.baseAddress, &bound, i.baseAddress, uLong(bytes.count), Self.level) }
        }
        guard rc == Z_OK else { throw SyncProtocolError(.malformedFrame, "zlib compression failed (\(rc))") }
        return Array(out.prefix(Int(bound)))
    }

    /// Inflates `data` that declares `declaredSize` bytes: refuses a declared size over the
    /// limit before inflating, inflates into a buffer of exactly that size, and refuses
    /// output that is longer (a zlib bomb) or shorter.
    public static func inflate(_ data: [UInt8], declaredSize: Int, limit: Int = maxPartSize) throws -> [UInt8] {
        var out: [UInt8] = []
        try data.withUnsafeBytes { try inflate($0, declaredSize: declaredSize, limit: limit, into: &out) }
        return out
    }

    /// `inflate(_:declaredSize:limit:)` into `out`, whose capacity is reused
    /// (no multi-megabyte allocation per part); `out` ends with exactly
    /// `declaredSize` bytes.
    public static func inflate(_ data: UnsafeRawBufferPointer, declaredSize: Int, limit: Int = maxPartSize,
                               into out: inout [UInt8]) throws {
        guard declaredSize >= 0, declaredSize <= limit else {
            throw SyncProtocolError(.inflateLimit, "a part declares \(declaredSize) uncompressed bytes; the limit is \(limit)")
        }
        // One spare byte detects longer output.
        out.resize(to: declaredSize + 1)
        var stream = z_stream()
        var rc = inflateInit_(&stream, ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size))
        guard rc == Z_OK else { throw SyncProtocolError(.malformedFrame, "zlib could not start (\(rc))") }
        defer { inflateEnd(&stream) }
        let produced: Int = out.withUnsafeMutableBufferPointer { o in
            // zlib does not write through next_in.
            stream.next_in = UnsafeMutablePointer(mutating: data.bindMemory(to: UInt8.self).baseAddress)
            stream.avail_in = uInt(data.count)
            stream.next_out = o.baseAddress
            stream.avail_out = uInt(o.count)
            rc = HPZlib.inflate(&stream, Z_FINISH)
            return o.count - Int(stream.avail_out)
        }
        if produced > declaredSize {
            throw SyncProtocolError(.inflateLimit, "a part inflates to more than its declared \(declaredSize) bytes")
        }
        guard rc == Z_STREAM_END else {
            throw SyncProtocolError(.malformedFrame, rc == Z_BUF_ERROR || rc == Z_OK
                ? "a part's zlib data ends early or declares too few bytes"
                : "a part's zlib data is corrupt (zlib \(rc))")
        }
        guard produced == declaredSize, stream.avail_in == 0 else {
            throw SyncProtocolError(.malformedFrame, "a part inflates to \(produced) bytes, not the declared \(declaredSize)")
        }
        out.removeLast()  // the spare byte; no copy
    }
}
