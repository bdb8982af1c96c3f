#if canImport(HPDeflate)
import HPDeflate
#endif
import HPZlib
import Foundation

/// zlib (RFC 1950) compression of bundle parts, with the uncompressed size
/// declared and checked before and while inflating (Protocol/README.md section 3).
///
/// Parts are whole buffers (at most `maxPartSize`), so libdeflate does the work
/// where the build has it (Linux): on a 1.8 MB bundle it deflates in 5.8 ms
/// against zlib's 10.2 ms at level 1, 12% smaller, and inflates in 1.6 ms
/// against 2.7 ms (docs/decisions/2026-11-24-libdeflate.md). Elsewhere zlib does
/// it. Both write and read the same format: either inflates what the other deflated.
public enum BundlePartCodec {
    /// Largest uncompressed part: 8 MiB.
    public static let maxPartSize = 8 * 1024 * 1024

    /// The deflate level the sender uses: 1 (fastest). On bundle text it compresses
    /// twice as fast as the default level 6 for about 8% more bytes on the wire
    /// (docs/decisions/2026-11-22-compression-level.md). Receivers accept any level.
    public static let level: Int32 = 1

    /// A library that writes and reads the zlib format.
    public enum Library: String, Sendable, CaseIterable {
        case libdeflate, zlib

        /// Whether this build links it.
        public var isAvailable: Bool {
            #if canImport(HPDeflate)
            return true
            #else
            return self == .zlib
            #endif
        }
    }

    /// The library parts are deflated and inflated with: libdeflate when linked, else zlib.
    public static let library: Library = Library.libdeflate.isAvailable ? .libdeflate : .zlib

    /// Deflates parts one after another, reusing its state (one per thread).
    public final class Compressor {
        public let library: Library
        #if canImport(HPDeflate)
        private let handle: OpaquePointer?
        #endif

        public init(library: Library = BundlePartCodec.library) {
            precondition(library.isAvailable, "\(library) is not linked in this build")
            self.library = library
            #if canImport(HPDeflate)
            handle = library == .libdeflate ? libdeflate_alloc_compressor(BundlePartCodec.level) : nil
            #endif
        }

        deinit {
            #if canImport(HPDeflate)
            if let handle { libdeflate_free_compressor(handle) }
            #endif
        }

        /// Compresses `input` into `output` (reused between parts, grown when needed);
        /// returns the compressed length.
        public func compress(_ input: UnsafeRawBufferPointer, into output: inout [UInt8]) throws -> Int {
            switch library {
            case .libdeflate:
                #if canImport(HPDeflate)
                guard let handle else { throw SyncProtocolError(.storage, "libdeflate could not allocate a compressor (out of memory?)") }
                let bound = libdeflate_zlib_compress_bound(handle, input.count)
                if output.count < bound { output = [UInt8](repeating: 0, count: bound) }
                let n = output.withUnsafeMutableBytes { o in libdeflate_zlib_compress(handle, input.baseAddress, input.count, o.baseAddress, o.count) }
                guard n > 0 else { throw SyncProtocolError(.malformedFrame, "libdeflate compression failed") }
                return n
                #else
                preconditionFailure("libdeflate is not linked")
                #endif
            case .zlib:
                var bound = compressBound(uLong(input.count))
                if output.count < Int(bound) { output = [UInt8](repeating: 0, count: Int(bound)) }
                let rc = output.withUnsafeMutableBufferPointer { o in
                    compress2(o.baseAddress, &bound, input.bindMemory(to: UInt8.self).baseAddress, uLong(input.count), BundlePartCodec.level)
                }
                guard rc == Z_OK else { throw SyncProtocolError(.malformedFrame, "zlib compression failed (\(rc))") }
                return Int(bound)
            }
        }
    }

    /// Compresses `bytes` (zlib format, level `level`).
    public static func compress(_ bytes: [UInt8], library: Library = library) throws -> [UInt8] {
        var out: [UInt8] = []
        let n = try bytes.withUnsafeBytes { try Compressor(library: library).compress($0, into: &out) }
        return Array(out.prefix(n))
    }

    /// Inflates `data` that declares `declaredSize` bytes: refuses a declared size over the
    /// limit before inflating, inflates into a buffer of exactly that size, and refuses
    /// output that is longer (a zlib bomb) or shorter.
    public static func inflate(_ data: [UInt8], declaredSize: Int, limit: Int = maxPartSize, library: Library = library) throws -> [UInt8] {
        var out: [UInt8] = []
        try data.withUnsafeBytes { try inflate($0, declaredSize: declaredSize, limit: limit, into: &out, library: library) }
        return out
    }

    /// `inflate(_:declaredSize:limit:)` into `out`, whose capacity is reused when it has room
    /// for more than `declaredSize` bytes (no multi-megabyte allocation per part), else made
    /// anew without being zeroed first; `out` ends with exactly `declaredSize` bytes.
    public static func inflate(_ data: UnsafeRawBufferPointer, declaredSize: Int, limit: Int = maxPartSize,
                               into out: inout [UInt8], library: Library = library) throws {
        guard declaredSize >= 0, declaredSize <= limit else {
            throw SyncProtocolError(.inflateLimit, "a part declares \(declaredSize) uncompressed bytes; the limit is \(limit)")
        }
        precondition(library.isAvailable, "\(library) is not linked in this build")
        // One spare byte detects longer output.
        let size = declaredSize + 1
        func run(_ buffer: UnsafeMutableRawBufferPointer) throws -> (produced: Int, consumed: Int) {
            library == .libdeflate ? try inflateWithLibdeflate(data, into: buffer, declaredSize: declaredSize)
                                   : try inflateWithZlib(data, into: buffer, declaredSize: declaredSize)
        }
        var result = (produced: 0, consumed: 0)
        if out.capacity >= size {
            out.resize(to: size)
            result = try out.withUnsafeMutableBytes { try run($0) }
        } else {
            out = try .filled(size) { buffer in
                result = try run(buffer)
                return result.produced
            }
        }
        let (produced, consumed) = result
        if produced > declaredSize {
            throw SyncProtocolError(.inflateLimit, "a part inflates to more than its declared \(declaredSize) bytes")
        }
        guard produced == declaredSize, consumed == data.count else {
            throw SyncProtocolError(.malformedFrame, produced != declaredSize
                ? "a part inflates to \(produced) bytes, not the declared \(declaredSize)"
                : "a part has \(data.count - consumed) bytes after its zlib data")
        }
        out.removeLast(out.count - declaredSize)  // the spare byte, when written; no copy
    }

    /// (bytes produced, bytes of `data` consumed) of a complete zlib stream.
    private static func inflateWithLibdeflate(_ data: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer, declaredSize: Int) throws -> (Int, Int) {
        #if canImport(HPDeflate)
        guard let d = libdeflate_alloc_decompressor() else { throw SyncProtocolError(.storage, "libdeflate could not allocate a decompressor (out of memory?)") }
        defer { libdeflate_free_decompressor(d) }
        var consumed = 0, produced = 0
        let rc = libdeflate_zlib_decompress_ex(d, data.baseAddress, data.count, out.baseAddress, out.count, &consumed, &produced)
        if rc == LIBDEFLATE_INSUFFICIENT_SPACE {
            throw SyncProtocolError(.inflateLimit, "a part inflates to more than its declared \(declaredSize) bytes")
        }
        // libdeflate does not tell data that ends early from corrupt data.
        guard rc == LIBDEFLATE_SUCCESS else { throw SyncProtocolError(.malformedFrame, "a part's zlib data is corrupt or ends early") }
        return (produced, consumed)
        #else
        preconditionFailure("libdeflate is not linked")
        #endif
    }

    private static func inflateWithZlib(_ data: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer, declaredSize: Int) throws -> (Int, Int) {
        guard let r = ZlibInflate.run(data, into: out, windowBits: 15) else {
            throw SyncProtocolError(.malformedFrame, "zlib could not start")
        }
        if r.produced > declaredSize {
            throw SyncProtocolError(.inflateLimit, "a part inflates to more than its declared \(declaredSize) bytes")
        }
        guard r.code == Z_STREAM_END else {
            throw SyncProtocolError(.malformedFrame, r.code == Z_BUF_ERROR || r.code == Z_OK
                ? "a part's zlib data ends early or declares too few bytes"
                : "a part's zlib data is corrupt (zlib \(r.code))")
        }
        return (r.produced, r.consumed)
    }
}
