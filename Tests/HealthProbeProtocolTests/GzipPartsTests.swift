import Foundation
import Testing
@testable import HealthProbeProtocol
import HealthProbeTestSupport

/// Kept bundles: one gzip member per received part, read back line by line, and
/// readable by any gzip tool; damage is found and named, never trapped on.
@Suite("Kept bundle gzip members")
struct GzipPartsTests {
    /// Lines of varied lengths, split into parts at arbitrary bytes (lines run across parts).
    static func parts(seed: UInt64) -> (lines: [[UInt8]], parts: [[UInt8]]) {
        var rng = seed
        func next() -> UInt64 { rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17; return rng }
        var lines: [[UInt8]] = []
        for i in 0..<3_000 {
            let n = Int(next() % 700) + (i % 97 == 0 ? 40_000 : 0)
            lines.append((0..<n).map { _ in UInt8(ascii: "a") + UInt8(next() % 26) })
        }
        var bytes: [UInt8] = []
        for l in lines { bytes += l + [0x0A] }
        var parts: [[UInt8]] = []
        var at = 0
        while at < bytes.count {
            let n = min(bytes.count - at, Int(next() % 200_000) + 1)
            parts.append(Array(bytes[at..<(at + n)]))
            at += n
        }
        return (lines, parts)
    }

    /// The kept file of `parts`, deflated with `library`.
    static func kept(_ parts: [[UInt8]], library: BundlePartCodec.Library) throws -> [UInt8] {
        var out: [UInt8] = []
        for p in parts {
            let zlib = try BundlePartCodec.compress(p, library: library)
            // As the server does: inflate first, then keep the member.
            let inflated = try BundlePartCodec.inflate(zlib, declaredSize: p.count)
            try zlib.withUnsafeBytes { z in try inflated.withUnsafeBytes { try GzipParts.appendMember(zlib: z, inflated: $0, newlines: inflated.count { $0 == 0x0A }, to: &out) } }
        }
        return out
    }

    static func write(_ bytes: [UInt8]) throws -> String {
        let path = NSTemporaryDirectory() + "gzip-parts-\(UUID().uuidString).jsonl.gz"
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        return path
    }

    @Test("lines read back exactly, across part boundaries, whichever library deflated the parts; gzip -dc gives the bundle's bytes",
          arguments: BundlePartCodec.Library.allCases.filter(\.isAvailable))
    func roundTrip(library: BundlePartCodec.Library) throws {
        let (lines, parts) = Self.parts(seed: 7)
        let path = try Self.write(try Self.kept(parts, library: library))
        defer { try? FileManager.default.removeItem(atPath: path) }
        #expect(GzipParts.isGzip(path))
        // Read back with each library too (zlib's raw inflate is the fallback where libdeflate is absent).
        for reading in BundlePartCodec.Library.allCases.filter(\.isAvailable) {
            let reader = try GzipParts.Lines(path: path, library: reading)
            #expect(Array(reader) == lines, "read with \(reading)")
            #expect(reader.failure == nil)
        }
        // Any gzip tool reads the file (it is standard multi-member gzip).
        let gzip = Process()
        gzip.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        gzip.arguments = ["gzip", "-dc", path]
        let pipe = Pipe()
        gzip.standardOutput = pipe
        try gzip.run()
        let text = pipe.fileHandleForReading.readDataToEndOfFile()
        gzip.waitUntilExit()
        #expect(gzip.terminationStatus == 0)
        #expect([UInt8](text) == parts.flatMap { $0 })
    }

    @Test("a member with no data and a final line without a newline read back as written")
    func edges() throws {
        let parts: [[UInt8]] = [Array("{\"a\":1}\n{\"b\"".utf8), [], Array(":2}".utf8)]
        let path = try Self.write(try Self.kept(parts, library: BundlePartCodec.library))
        defer { try? FileManager.default.removeItem(atPath: path) }
        #expect(Array(try GzipParts.Lines(path: path)) == [Array("{\"a\":1}".utf8), Array("{\"b\":2}".utf8)])
    }

    @Test("damage anywhere is found: the lines stop and the failure names the member's byte; nothing traps (read with each library)",
          arguments: BundlePartCodec.Library.allCases.filter(\.isAvailable))
    func damage(reading: BundlePartCodec.Library) throws {
        let (_, parts) = Self.parts(seed: 11)
        let good = try Self.kept(Array(parts.prefix(6)), library: BundlePartCodec.library)
        let firstMember = Int(good[16]) | Int(good[17]) << 8 | Int(good[18]) << 16 | Int(good[19]) << 24
        var cases: [(String, [UInt8])] = []
        var flipped = good; flipped[firstMember + 200] ^= 0x40; cases.append(("a byte of the second member's data", flipped))
        var crc = good; crc[firstMember - 8] ^= 1; cases.append(("the first member's CRC-32", crc))
        var size = good; size[firstMember - 4] ^= 1; cases.append(("the first member's size", size))
        var huge = good; huge[firstMember - 1] = 0x7F; cases.append(("a size over the part limit", huge))
        var length = good; length[19] = 0x7F; cases.append(("a member length past the limit", length))
        var magic = good; magic[1] = 0x8C; cases.append(("the gzip magic", magic))
        var sub = good; sub[12] = UInt8(ascii: "B"); cases.append(("the subfield id", sub))
        cases.append(("a file cut inside a member", Array(good.prefix(good.count - 9))))
        cases.append(("a file cut inside a header", Array(good.prefix(firstMember + 7))))
        for (what, bytes) in cases {
            let path = try Self.write(bytes)
            defer { try? FileManager.default.removeItem(atPath: path) }
            let reader = try GzipParts.Lines(path: path, library: reading)
            let read = Array(reader)
            let failure = try #require(reader.failure, "\(what): not found")
            #expect(failure.description.contains("damaged at byte"), "\(what)")
            #expect(read.count < Self.lineCount(parts.prefix(6)), "\(what)")
        }
        // Random damage, many times: never a trap, always found (every header byte is checked, the data has its CRC-32).
        var rng: UInt64 = 99
        for _ in 0..<60 {
            rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17
            var bytes = good
            bytes[Int(rng % UInt64(bytes.count))] ^= UInt8(truncatingIfNeeded: rng >> 32) | 1
            let path = try Self.write(bytes)
            defer { try? FileManager.default.removeItem(atPath: path) }
            let reader = try GzipParts.Lines(path: path, library: reading)
            let read = Array(reader)
            #expect(reader.failure != nil, "a flipped byte went unnoticed (\(read.count) lines read)")
        }
    }

    @Test("each member's header records its data (size, Adler-32, lines, whether it ends at a line), read from the headers alone; members written before the records read back the same, and a file holding one has no records")
    func records() throws {
        let (lines, parts) = Self.parts(seed: 5)
        let bytes = try Self.kept(parts, library: BundlePartCodec.library)
        let path = try Self.write(bytes)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let records = try #require(try GzipParts.Lines(path: path).recordedMembers())
        #expect(records == parts.map { p in p.withUnsafeBytes { GzipParts.Recorded($0, newlines: p.count { $0 == 0x0A }) } })
        #expect(records.map(\.size) == parts.map(\.count) && records.map(\.endsAtLine) == parts.map { $0.last == 0x0A })
        #expect(records.map(\.adler) == (try parts.map { p in
            let zlib = try BundlePartCodec.compress(p)
            return zlib.suffix(4).reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        }), "the part's own zlib trailer")

        // Data damaged behind intact headers: the records read all the same (nothing is inflated); the lines find it.
        let firstMember = Int(bytes[16]) | Int(bytes[17]) << 8 | Int(bytes[18]) << 16 | Int(bytes[19]) << 24
        var damaged = bytes
        damaged[firstMember / 2] ^= 0x21
        let damagedPath = try Self.write(damaged)
        defer { try? FileManager.default.removeItem(atPath: damagedPath) }
        #expect(try GzipParts.Lines(path: damagedPath).recordedMembers() == records)
        let reader = try GzipParts.Lines(path: damagedPath)
        _ = Array(reader)
        #expect(reader.failure?.description.contains("damaged at byte 0") == true)
        // Cut inside the last member: found from the lengths alone.
        let cutPath = try Self.write(Array(bytes.dropLast(3)))
        defer { try? FileManager.default.removeItem(atPath: cutPath) }
        #expect { _ = try GzipParts.Lines(path: cutPath).recordedMembers() } throws: { "\($0)".contains("ends inside a member") }

        // The first two members written in the former form (the length alone): no records; the lines are the same.
        let mixedPath = try Self.write(FormerGzipMembers.rewrite(bytes, count: 2))
        defer { try? FileManager.default.removeItem(atPath: mixedPath) }
        #expect(try GzipParts.Lines(path: mixedPath).recordedMembers() == nil)
        let mixed = try GzipParts.Lines(path: mixedPath)
        #expect(Array(mixed) == lines && mixed.failure == nil)
        // Read member by member: a record is handed over once checked against the data; a former member has none.
        let members = try GzipParts.Lines(path: mixedPath)
        var checked: [GzipParts.Recorded?] = []
        while try members.nextMember({ _, _ in true }) != nil { checked.append(members.checkedRecord) }
        #expect(checked == [nil, nil] + records.dropFirst(2).map { $0 })
    }

    static func lineCount(_ parts: ArraySlice<[UInt8]>) -> Int { parts.flatMap { $0 }.filter { $0 == 0x0A }.count }

    @Test("each member, read whole, gives its part's deflate data and bytes; wrapped again as zlib with their Adler-32 it is the part as sent, and inflates to it",
          arguments: BundlePartCodec.Library.allCases.filter(\.isAvailable))
    func membersAsParts(library: BundlePartCodec.Library) throws {
        let (_, parts) = Self.parts(seed: 11)
        let path = try Self.write(try Self.kept(parts, library: library))
        defer { try? FileManager.default.removeItem(atPath: path) }
        let reader = try GzipParts.Lines(path: path, library: library), raw = try GzipParts.Lines(path: path, library: library)
        var index = 0
        while let (zlib, size) = try reader.nextMember({ deflate, inflated in
            (GzipParts.zlibStream(deflate: deflate, adler: GzipParts.adler32(inflated)), inflated.count) }) {
            #expect(index < parts.count)
            guard index < parts.count else { break }
            #expect(size == parts[index].count)
            #expect(reader.checkedRecord == parts[index].withUnsafeBytes { GzipParts.Recorded($0, newlines: parts[index].count { $0 == 0x0A }) })
            // Level 1 writes the header 0x78 0x01 too: the stream is the one the sender made.
            #expect(zlib == (try BundlePartCodec.compress(parts[index], library: library)), "part \(index)")
            #expect(try BundlePartCodec.inflate(zlib, declaredSize: size) == parts[index])
            // Read without inflating, a member gives the same deflate data.
            let read = try raw.nextMember(inflating: false) { deflate, inflated in (Array(deflate), inflated.count) }
            #expect(read?.0 == Array(zlib[2..<(zlib.count - 4)]) && read?.1 == 0)
            #expect(raw.checkedRecord == nil, "not inflated, not checked")
            index += 1
        }
        #expect(index == parts.count)
        #expect(try raw.nextMember(inflating: false) { _, _ in true } == nil)
        #expect(GzipParts.adler32(UnsafeRawBufferPointer(start: nil, count: 0)) == 1)
    }
}
