import Foundation
import NIOCore
import NIOEmbedded
import NIOTestUtils
import Testing
import HealthProbeCanonical
@testable import HealthProbeProtocol
import HealthProbeTestSupport

struct FrameVectors: Decodable {
    struct Frame: Decodable { var type: UInt8; var payloadHex: String }
    struct FrameCase: Decodable { var name: String; var hex: String; var frames: [Frame]?; var error: String?; var incomplete: Bool? }
    struct HelloCase: Decodable { var name: String; var hex: String; var version: UInt16?; var error: String?; var incomplete: Bool? }
    struct PartCase: Decodable { var name: String; var zlibHex: String; var declared: Int; var inflatedHex: String?; var error: String? }
    struct TokenCase: Decodable {
        var nameOfCase: String; var text: String; var error: String?
        var address: String?; var fingerprint: String?; var name: String?; var secret: String?
    }
    struct StoredSecret: Decodable { var credential: String?; var enrollmentSecret: String?; var storedHash: String }
    var frames: [FrameCase]
    var hellos: [HelloCase]
    var parts: [PartCase]
    var tokens: [TokenCase]
    var storedSecrets: [StoredSecret]

    static func load() throws -> FrameVectors {
        let d = JSONDecoder()
        d.keyDecodingStrategy = .convertFromSnakeCase
        return try d.decode(FrameVectors.self, from: Data(contentsOf: vectorURL("frames.json")))
    }
}

/// The bytes of a vector's lower-case hex.
func bytes(_ hex: String) -> [UInt8] {
    ArchiveHasher.bytes(lowerHex: hex)!
}

@Suite("Sync frame codec")
struct FrameCodecTests {
    let v: FrameVectors
    init() throws { v = try FrameVectors.load() }

    @Test("frame vectors decode, or fail with their error, fed whole and byte by byte")
    func frameVectors() throws {
        #expect(v.frames.count >= 13)
        for c in v.frames {
            for chunked in [false, true] {
                let channel = EmbeddedChannel(handler: ByteToMessageHandler(SyncFrameDecoder()))
                let input = bytes(c.hex)
                var decoded: [SyncFrame] = []
                var failure: SyncProtocolError?
                do {
                    if chunked {
                        for b in input { try channel.writeInbound(channel.allocator.buffer(bytes: [b])) }
                    } else {
                        try channel.writeInbound(channel.allocator.buffer(bytes: input))
                    }
                    while let f: SyncFrame = try channel.readInbound() { decoded.append(f) }
                } catch let e as SyncProtocolError { failure = e }
                if let expected = c.error {
                    #expect(failure?.code.rawValue == expected, "\(c.name)")
                    _ = try? channel.finish()
                    continue
                }
                #expect(failure == nil, "\(c.name): \(String(describing: failure))")
                let want = c.frames ?? []
                #expect(decoded.count == want.count, "\(c.name)")
                for (f, w) in zip(decoded, want) {
                    #expect(f.kind.rawValue == w.type)
                    #expect(Array(f.payload.readableBytesView) == bytes(w.payloadHex), "\(c.name)")
                }
                if c.incomplete == true {
                    // Bytes left over at the end are a truncated frame.
                    #expect(throws: (any Error).self) { _ = try channel.finish() }
                } else {
                    #expect(try channel.finish().isClean, "\(c.name)")
                }
            }
        }
    }

    @Test("enrollment token and stored-secret vectors (Protocol/README.md section 7)")
    func tokenVectors() throws {
        let v = try FrameVectors.load()
        #expect(v.tokens.count >= 5)
        for c in v.tokens {
            if let error = c.error {
                #expect { try EnrollmentToken(text: c.text) } throws: { "\($0)".contains(error) }
            } else {
                let t = try EnrollmentToken(text: c.text)
                #expect(t == EnrollmentToken(address: c.address!, fingerprint: c.fingerprint!, name: c.name!, secret: c.secret!), "\(c.nameOfCase)")
                #expect(t.text == c.text, "the product writes the same token text")
            }
        }
        for s in v.storedSecrets {
            if let c = s.credential { #expect(ArchiveHasher.sha256(.credential, c) == s.storedHash) }
            if let e = s.enrollmentSecret { #expect(ArchiveHasher.sha256(.enrollmentSecret, e) == s.storedHash) }
        }
    }

    @Test("the decoder passes NIO's ByteToMessageDecoderVerifier")
    func verifier() throws {
        var input: [(ByteBuffer, [SyncFrame])] = []
        for c in v.frames where c.frames != nil && c.incomplete != true {
            let expected = c.frames!.map { SyncFrame(kind: SyncFrame.Kind(rawValue: $0.type)!, payload: ByteBuffer(bytes: bytes($0.payloadHex))) }
            input.append((ByteBuffer(bytes: bytes(c.hex)), expected))
        }
        try ByteToMessageDecoderVerifier.verifyDecoder(inputOutputPairs: input) { SyncFrameDecoder() }
    }

    @Test("encode then decode round-trips every frame kind; an oversize frame is refused on send")
    func roundTrip() throws {
        let channel = EmbeddedChannel(handlers: [ByteToMessageHandler(SyncFrameDecoder()), MessageToByteHandler(SyncFrameEncoder())])
        for kind in SyncFrame.Kind.allCases {
            let frame = SyncFrame(kind: kind, payload: ByteBuffer(string: "{\"k\":\(kind.rawValue)}"))
            try channel.writeOutbound(frame)
            let wire: ByteBuffer = try channel.readOutbound()!
            try channel.writeInbound(wire)
            #expect(try channel.readInbound() == frame)
        }
        #expect(try channel.finish().isClean)
        #expect(throws: SyncProtocolError.self) {
            var out = ByteBuffer()
            try SyncFrameEncoder().encode(data: SyncFrame(kind: .bundlePart, payload: ByteBuffer(repeating: 0, count: SyncFrame.maxLength)), out: &out)
        }
    }

    @Test("hello vectors")
    func hellos() throws {
        #expect(v.hellos.count >= 4)
        for c in v.hellos {
            let channel = EmbeddedChannel(handler: ByteToMessageHandler(SyncHelloDecoder()))
            do {
                try channel.writeInbound(channel.allocator.buffer(bytes: bytes(c.hex)))
                let hello: SyncHello? = try channel.readInbound()
                #expect(c.error == nil, "\(c.name)")
                if let version = c.version { #expect(hello?.version == version, "\(c.name)") }
                if c.incomplete == true { #expect(hello == nil) }
            } catch let e as SyncProtocolError {
                #expect(e.code.rawValue == c.error, "\(c.name)")
            }
            _ = try? channel.finish()
        }
        var b = ByteBuffer()
        SyncHello().write(to: &b)
        #expect(Array(b.readableBytesView) == bytes(v.hellos[0].hex))
    }

    /// The libraries this build links (libdeflate on Linux, and zlib everywhere).
    static let libraries = BundlePartCodec.Library.allCases.filter(\.isAvailable)

    @Test("bundle parts: inflate checks the declared size; a zlib bomb is refused (with every library linked)")
    func parts() throws {
        #if os(Linux)
        #expect(Self.libraries == [.libdeflate, .zlib])
        #expect(BundlePartCodec.library == .libdeflate)
        #endif
        #expect(v.parts.count >= 5)
        for library in Self.libraries {
            for c in v.parts {
                do {
                    let out = try BundlePartCodec.inflate(bytes(c.zlibHex), declaredSize: c.declared, library: library)
                    #expect(c.error == nil, "\(c.name) with \(library)")
                    #expect(out == bytes(c.inflatedHex ?? ""), "\(c.name) with \(library)")
                } catch let e as SyncProtocolError {
                    #expect(e.code.rawValue == c.error, "\(c.name) with \(library): \(e)")
                }
            }
        }
    }

    @Test("bundle parts: inflated into a buffer used before (longer, shorter, of stale bytes), a part ends with exactly its bytes; the same data is refused as into a new one")
    func partsIntoReusedBuffers() throws {
        var rng = TestRandom(seed: 12)
        let data = Array((0..<3000).map { i in "{\"n\":\(i),\"v\":\(rng.next() % 1000)}\n" }.joined().utf8)
        let z = try BundlePartCodec.compress(data)
        for library in Self.libraries {
            // Stale bytes that must not survive: more, as many and fewer than the part; and room reserved but empty.
            var reserved: [UInt8] = []
            reserved.reserveCapacity(data.count + 100)
            for stale in [[UInt8](repeating: 0xEE, count: data.count + 100), [UInt8](repeating: 0xEE, count: data.count),
                          [UInt8](repeating: 0xEE, count: data.count / 2), reserved] {
                var out = stale
                try z.withUnsafeBytes { try BundlePartCodec.inflate($0, declaredSize: data.count, into: &out, library: library) }
                #expect(out == data, "\(library), \(stale.count) stale bytes")
                // A larger part next, into the same buffer.
                let bigger = data + Array("{\"n\":-1}\n".utf8)
                try BundlePartCodec.compress(bigger).withUnsafeBytes { try BundlePartCodec.inflate($0, declaredSize: bigger.count, into: &out, library: library) }
                #expect(out == bigger, "\(library): a larger part after it")
                func code(_ input: [UInt8], _ declared: Int) -> String? {
                    var reused = stale
                    do { try input.withUnsafeBytes { try BundlePartCodec.inflate($0, declaredSize: declared, into: &reused, library: library) }; return nil }
                    catch let e as SyncProtocolError { return e.code.rawValue } catch { return "\(error)" }
                }
                #expect(code(z, data.count - 1) == "inflate_limit", "\(library): more than declared")
                #expect(code(z, data.count + 1) == "malformed_frame", "\(library): less than declared")
                #expect(code(z + [0], data.count) == "malformed_frame", "\(library): a byte after the stream")
            }
        }
    }

    @Test("resize keeps the bytes it keeps and zeroes the ones it adds, within the capacity and past it")
    func resize() {
        var a = [UInt8](repeating: 7, count: 10)
        a.resize(to: 4)
        #expect(a == [7, 7, 7, 7])
        a.resize(to: 200_000)  // past the capacity: made anew, more than one chunk of zeros
        #expect(a.count == 200_000 && a.prefix(4) == [7, 7, 7, 7] && a.dropFirst(4).allSatisfy { $0 == 0 })
        a.resize(to: 3)
        a.resize(to: 150_000)  // within the capacity kept
        #expect(a.count == 150_000 && a.prefix(3) == [7, 7, 7] && a.dropFirst(3).allSatisfy { $0 == 0 })
    }

    @Test("bundle parts: what one library deflates the other inflates; truncated, extended or corrupted data and a wrong declared size are refused by both")
    func partLibrariesAgree() throws {
        var rng = TestRandom(seed: 11)
        let lines = (0..<4000).map { i in "{\"kind\":\"event\",\"n\":\(i),\"v\":\(rng.next() % 1000)}\n" }
        let data = Array(lines.joined().utf8)
        for writer in Self.libraries {
            let z = try BundlePartCodec.compress(data, library: writer)
            #expect(z.count < data.count / 3)
            #expect(z.first == 0x78, "a zlib header")
            for reader in Self.libraries {
                let label = "\(writer) -> \(reader)"
                #expect(try BundlePartCodec.inflate(z, declaredSize: data.count, library: reader) == data, "\(label)")
                func code(_ input: [UInt8], _ declared: Int) -> String? {
                    do { _ = try BundlePartCodec.inflate(input, declaredSize: declared, library: reader); return nil } catch let e as SyncProtocolError { return e.code.rawValue } catch { return "\(error)" }
                }
                #expect(code([], 0) == "malformed_frame", "\(label): no data")
                #expect(code(z, data.count - 1) == "inflate_limit", "\(label): more than declared")
                #expect(code(z, data.count + 1) == "malformed_frame", "\(label): less than declared")
                #expect(code(Array(z.dropLast(9)), data.count) == "malformed_frame", "\(label): truncated")
                #expect(code(z + [0], data.count) == "malformed_frame", "\(label): a byte after the stream")
                var corrupt = z
                corrupt[corrupt.count - 2] ^= 0x55  // inside the Adler-32
                #expect(code(corrupt, data.count) == "malformed_frame", "\(label): checksum")
                #expect(code(z, BundlePartCodec.maxPartSize + 1) == "inflate_limit", "\(label): over the limit")
            }
        }
        // The reusable compressor gives the same bytes part after part.
        for library in Self.libraries {
            let compressor = BundlePartCodec.Compressor(library: library)
            var out: [UInt8] = []
            let first = try data.withUnsafeBytes { try compressor.compress($0, into: &out) }
            let a = Array(out.prefix(first))
            let second = try data.withUnsafeBytes { try compressor.compress($0, into: &out) }
            #expect(Array(out.prefix(second)) == a)
            #expect(a == (try BundlePartCodec.compress(data, library: library)))
        }
    }

    @Test("bounded fuzz: random bytes and mutated vectors never crash the decoders")
    func fuzz() throws {
        var rng = TestRandom(printingSeedFor: "FrameCodecTests.fuzz")
        var frames = 0, refusedFrames = 0, hellos = 0
        let seeds = v.frames.map { bytes($0.hex) } + v.hellos.map { bytes($0.hex) }
        for i in 0..<3000 {
            var input: [UInt8]
            if i % 2 == 0 {
                input = (0..<Int.random(in: 0...64, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
            } else {
                input = seeds[i % seeds.count]
                for _ in 0..<Int.random(in: 1...4, using: &rng) where !input.isEmpty {
                    input[Int.random(in: 0..<input.count, using: &rng)] = UInt8.random(in: 0...255, using: &rng)
                }
            }
            var buffer = ByteBuffer(bytes: input)
            var decoder = SyncFrameDecoder(maxLength: 4096)
            do {
                while try decoder.decode(buffer: &buffer) != nil { frames += 1 }
            } catch {
                refusedFrames += 1
            }
            var hb = ByteBuffer(bytes: input)
            var hello = SyncHelloDecoder()
            if (try? hello.decode(buffer: &hb)) != nil { hellos += 1 }
            for library in Self.libraries { _ = try? BundlePartCodec.inflate(input, declaredSize: Int.random(in: 0...1024, using: &rng), library: library) }
        }
        // Both outcomes were reached: the mutations are neither all accepted nor all refused.
        #expect(frames > 0 && refusedFrames > 0, "frames \(frames), refused \(refusedFrames), seed \(rng.seed)")
        #expect(hellos > 0, "seed \(rng.seed)")
    }
}
