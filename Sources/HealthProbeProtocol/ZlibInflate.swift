import HPZlib

/// One whole-buffer inflate with zlib, where libdeflate is not linked or not chosen:
/// zlib-wrapped data (RFC 1950, `windowBits` 15) for bundle parts, raw deflate
/// (RFC 1951, `windowBits` -15) for the members of kept bundles. Callers judge
/// the result (`Z_STREAM_END`, and how much was produced and consumed).
enum ZlibInflate {
    struct Result {
        /// zlib's return code for `inflate(Z_FINISH)`.
        let code: Int32
        /// Bytes written to `out`.
        let produced: Int
        /// Bytes of `data` read.
        let consumed: Int
    }

    /// Inflates `data` into `out` in one call; nil when zlib cannot start.
    static func run(_ data: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer, windowBits: Int32) -> Result? {
        var stream = z_stream()
        guard inflateInit2_(&stream, windowBits, ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size)) == Z_OK else { return nil }
        defer { inflateEnd(&stream) }
        // zlib wants a real output pointer even for no output.
        var spare: UInt8 = 0
        return withUnsafeMutablePointer(to: &spare) { sp in
            // zlib does not write through next_in.
            stream.next_in = UnsafeMutablePointer(mutating: data.bindMemory(to: UInt8.self).baseAddress)
            stream.avail_in = uInt(data.count)
            stream.next_out = out.count > 0 ? out.bindMemory(to: UInt8.self).baseAddress : sp
            stream.avail_out = uInt(out.count)
            let code = HPZlib.inflate(&stream, Z_FINISH)
            return Result(code: code, produced: out.count - Int(stream.avail_out), consumed: data.count - Int(stream.avail_in))
        }
    }
}
