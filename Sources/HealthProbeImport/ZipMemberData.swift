import Foundation
import HPZlib

/// One zip member's data, read from the file within its compressed size and inflated with
/// zlib. ZIPFoundation's own inflate on Linux reads on past the member until its deflate
/// stream ends, and where the file ends first it asks for more forever (an import that never
/// ends, from one crafted file): here a stream that does not end within its member is a
/// corrupt zip (docs/decisions/2026-12-02-zip-member-inflate.md). Where the member is and how
/// it is stored come from `ZipDirectoryCheck`, which reads the directory as ZIPFoundation does.
struct ZipMemberData: Sendable, Equatable {
    /// Where its data starts: after its local header, name and extra field.
    let dataOffset: UInt64
    /// Its bytes in the file: the compressed size, or for a stored member its size (as
    /// ZIPFoundation reads a stored member).
    let size: UInt64
    /// The local header's method, as ZIPFoundation reads it: 0 stored, 8 deflated.
    let method: UInt16

    /// The member's deflate stream has not ended at its last byte, or cannot be inflated.
    struct Corrupt: Error, CustomStringConvertible {
        let what: String
        var description: String { what }
    }

    /// Calls `body` with the member's bytes, at most `chunk` at a time, in order; returns
    /// when they end, or throws what `body` or the reading throws.
    func read(path: String, chunk: Int = 256 * 1024, _ body: (Data) throws -> Void) throws {
        guard let file = FileHandle(forReadingAtPath: path) else { throw Corrupt(what: "\(path) cannot be opened") }
        defer { try? file.close() }
        try file.seek(toOffset: dataOffset)
        var remaining = size
        // The file's end ends the member's data too (a size of all ones ZIPFoundation also reads so);
        // a stored member cut short then fails its CRC check, a deflated one its stream's end.
        func next() throws -> Data {
            let want = Int(min(remaining, UInt64(chunk)))
            let data = try file.read(upToCount: want) ?? Data()
            remaining = data.count == want ? remaining - UInt64(want) : 0
            return data
        }
        switch method {
        case 0:
            while remaining > 0 {
                let data = try next()
                if !data.isEmpty { try body(data) }
            }
        case 8:
            try inflate(next: next, remaining: { remaining }, chunk: chunk, body)
        default:
            throw Corrupt(what: "the member is compressed with method \(method), not deflate")
        }
    }

    private func inflate(next: () throws -> Data, remaining: () -> UInt64, chunk: Int, _ body: (Data) throws -> Void) throws {
        var stream = z_stream()
        guard inflateInit2_(&stream, -MAX_WBITS, ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size)) == Z_OK else { throw Corrupt(what: "zlib could not start inflating") }
        defer { inflateEnd(&stream) }
        var output = [UInt8](repeating: 0, count: chunk)
        var input = Data(), offset = 0
        while true {
            if offset == input.count {
                guard remaining() > 0 else { throw Corrupt(what: "the member's deflate stream has not ended at its last byte (truncated or corrupt)") }
                input = try next()
                offset = 0
            }
            var result: Int32 = Z_OK
            var (used, produced) = (0, 0)
            input.withUnsafeBytes { raw in
                output.withUnsafeMutableBufferPointer { out in
                    stream.next_in = UnsafeMutablePointer(mutating: raw.bindMemory(to: Bytef.self).baseAddress! + offset)
                    stream.avail_in = uInt(input.count - offset)
                    stream.next_out = out.baseAddress
                    stream.avail_out = uInt(out.count)
                    result = HPZlib.inflate(&stream, Z_NO_FLUSH)
                    used = input.count - offset - Int(stream.avail_in)
                    produced = out.count - Int(stream.avail_out)
                }
            }
            offset += used
            if produced > 0 { try body(Data(output[0..<produced])) }
            switch result {
            case Z_STREAM_END: return
            // zlib moves on while it returns Z_OK; one that neither reads nor writes would loop.
            case Z_OK where used > 0 || produced > 0: continue
            case Z_BUF_ERROR where offset == input.count: continue  // it wants the next input
            default: throw Corrupt(what: "the member's deflate data is corrupt (zlib \(result))")
            }
        }
    }
}
