import Foundation
import HealthProbeCanonical
import HealthProbeProtocol
import NIOCore

/// Seed inputs for each target, made from `Protocol/vectors`, and the kept
/// findings of earlier runs (`Protocol/vectors/fuzz/<target>/`).
public enum FuzzSeeds {
    public struct Seed: Sendable {
        public var name: String
        public var bytes: [UInt8]
    }

    public static func seeds(_ target: FuzzTarget, vectors: URL) throws -> [Seed] {
        var out: [Seed]
        switch target {
        case .frames: out = try frames(vectors)
        case .messages: out = try messages(vectors)
        case .replies: out = try replies(vectors)
        case .verify: out = try bundles(vectors).map { Seed(name: $0.name, bytes: $0.lines.flatMap { (l: [UInt8]) -> [UInt8] in l + [0x0A] }) }
        case .apply: out = try bundles(vectors).map { Seed(name: $0.name, bytes: $0.lines.dropLast().flatMap { (l: [UInt8]) -> [UInt8] in l + [0x0A] }) }
        case .hae: out = HAEFuzzer.seeds.map { Seed(name: $0.0, bytes: Array($0.1.utf8)) }
        }
        return out + (try kept(target, vectors: vectors))
    }

    /// Inputs that once failed, kept as vectors: every one must pass now.
    public static func kept(_ target: FuzzTarget, vectors: URL) throws -> [Seed] {
        let dir = vectors.appendingPathComponent("fuzz/\(target.rawValue)")
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: dir.path) else { return [] }
        return try names.sorted().filter { !$0.hasPrefix(".") && !$0.hasSuffix(".md") }.map {
            Seed(name: "kept/\($0)", bytes: Array(try Data(contentsOf: dir.appendingPathComponent($0))))
        }
    }

    static func json(_ url: URL) throws -> [String: JSONValue] {
        guard case .object(let o) = try JSONParser.parse(Array(try Data(contentsOf: url))) else { return [:] }
        return o
    }

    static func frameBytes(_ frames: [SyncFrame], hello: Bool = true, version: UInt16 = SyncHello.currentVersion) throws -> [UInt8] {
        var b = ByteBuffer()
        if hello { SyncHello(version: version).write(to: &b) }
        for f in frames { try SyncFrameEncoder().encode(data: f, out: &b) }
        return Array(b.readableBytesView)
    }

    static let auth = try! SyncFrame.json(.auth, .object(["device_name": .string("fuzz"), "credential": .string(String(repeating: "ab", count: 32)),
                                                          "client_time": .string("2026-01-01T00:00:00.000Z")]))

    static func frames(_ vectors: URL) throws -> [Seed] {
        let v = try json(vectors.appendingPathComponent("frames.json"))
        var out: [Seed] = []
        if case .array(let hellos)? = v["hellos"] {
            for case .object(let h) in hellos { if case .string(let x)? = h["hex"] { out.append(Seed(name: "hello", bytes: ArchiveHasher.bytes(lowerHex: x) ?? [])) } }
        }
        let prefix = try frameBytes([auth])
        if case .array(let frames)? = v["frames"] {
            for case .object(let f) in frames { if case .string(let x)? = f["hex"] { out.append(Seed(name: "frames", bytes: prefix + (ArchiveHasher.bytes(lowerHex: x) ?? []))) } }
        }
        // Whole transfers of the bundle vectors, in one part and in two, declared first and streamed (version 3).
        for (name, lines) in try bundles(vectors) {
            let body: [UInt8] = lines.flatMap { $0 + [0x0A] }
            for split in [body.count, body.count / 2] {
              for streamed in [false, true] {
                let chunks: [ArraySlice<UInt8>] = split == body.count ? [body[...]] : [body[..<split], body[split...]]
                let declared = try SyncFrame.json(streamed ? .bundleStreamEnd : .bundleBegin, .object([
                    "sequence": .int(1), "manifest_hash": .string(String(repeating: "0", count: 64)), "parts": .int(chunks.count),
                    "item_count": .int(lines.count - 2), "uncompressed_size": .int(body.count)]))
                var frames = [auth, streamed ? try SyncFrame.json(.bundleStreamBegin, .object(["sequence": .int(1)])) : declared]
                for (i, chunk) in chunks.enumerated() {
                    var p = ByteBuffer()
                    p.writeInteger(UInt32(i), endianness: .big)
                    p.writeInteger(UInt32(chunk.count), endianness: .big)
                    p.writeBytes(try BundlePartCodec.compress(Array(chunk)))
                    frames.append(SyncFrame(kind: .bundlePart, payload: p))
                }
                frames.append(streamed ? declared : try SyncFrame.json(.bundleEnd, .object(["sequence": .int(1), "manifest_hash": .string(String(repeating: "0", count: 64))])))
                frames.append(SyncFrame(kind: .ping, payload: ByteBuffer()))
                out.append(Seed(name: "transfer \(name)\(streamed ? " streamed" : "")", bytes: try frameBytes(frames, version: streamed ? SyncHello.streamVersion : SyncHello.currentVersion)))
              }
            }
        }
        return out
    }

    static func messages(_ vectors: URL) throws -> [Seed] {
        let kinds = SyncFrame.Kind.allCases
        let names = Dictionary(uniqueKeysWithValues: kinds.map { ($0.name, $0) })
        var out: [Seed] = [Seed(name: "ping", bytes: [UInt8(kinds.firstIndex(of: .ping)!)])]
        let m = try json(vectors.appendingPathComponent("messages.json"))
        if case .array(let cases)? = m["cases"] {
            for case .object(let c) in cases {
                guard case .string(let frame)? = c["frame"], let kind = names[frame], case .string(let payload)? = c["payload"] else { continue }
                out.append(Seed(name: frame, bytes: [UInt8(kinds.firstIndex(of: kind)!)] + Array(payload.utf8)))
            }
        }
        let f = try json(vectors.appendingPathComponent("frames.json"))
        if case .array(let tokens)? = f["tokens"] {
            for case .object(let t) in tokens { if case .string(let text)? = t["text"] { out.append(Seed(name: "token", bytes: [0] + Array(text.utf8))) } }
        }
        for (name, lines) in try bundles(vectors) { out.append(Seed(name: "header \(name)", bytes: [0] + lines[0])) }
        return out
    }

    /// Every server reply of `replies.json`, behind the byte that picks its kind.
    static func replies(_ vectors: URL) throws -> [Seed] {
        let kinds = SyncFrame.Kind.allCases
        var out: [Seed] = []
        let r = try json(vectors.appendingPathComponent("replies.json"))
        if case .array(let cases)? = r["cases"] {
            for case .object(let c) in cases {
                guard case .string(let frame)? = c["frame"], let kind = kinds.firstIndex(where: { $0.name == frame }), case .string(let payload)? = c["payload"] else { continue }
                out.append(Seed(name: frame, bytes: [UInt8(kind)] + Array(payload.utf8)))
            }
        }
        return out
    }

    /// Every bundle vector (`bundles/*.jsonl`, `bundles/chain/*.jsonl`) as lines.
    static func bundles(_ vectors: URL) throws -> [(name: String, lines: [[UInt8]])] {
        var out: [(String, [[UInt8]])] = []
        for dir in ["bundles", "bundles/chain"] {
            let d = vectors.appendingPathComponent(dir)
            for f in try FileManager.default.contentsOfDirectory(atPath: d.path).sorted() where f.hasSuffix(".jsonl") {
                let data = try Data(contentsOf: d.appendingPathComponent(f))
                let lines = Array(data).withUnsafeBytes { BundleFuzzer.lines($0) }
                if lines.count >= 2 { out.append(("\(dir)/\(f)", lines)) }
            }
        }
        return out
    }
}
