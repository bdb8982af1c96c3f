import Foundation
import Synchronization
import GRDB
import NIOCore
import Testing
@testable import HealthProbeArchive
import HealthProbeCanonical
import HealthProbeProtocol
import HealthProbeNode
import HealthProbeTestSupport

/// A restore trusts nothing from the server (Protocol/README.md section 8.2): a hostile
/// server over TLS on 127.0.0.1 answers `RESTORE_REQUEST` with every refused vector and
/// with replies that decode but do not fit; the node stores nothing of any, and then
/// restores from the same server answering honestly.
@Suite("A restore trusts nothing from a server (a hostile server over TLS on 127.0.0.1)", .serialized)
struct HostileRestoreTests {
    /// The bundle of a one-observation chain, its manifest hash and chain state, and an
    /// empty home holding the same keys (the chain a restore asks for).
    struct Fixture {
        let source: TempHome
        let target: TempHome
        let lines: [[UInt8]]
        let hash: String
        let state: ChainStateDigest.Result
        let chain: String
        /// The session's version: 2 announces a bundle with its chain state (`RESTORE_BUNDLE`), 3 sends
        /// the state after the parts (`RESTORE_STREAM`, the parts, `RESTORE_STATE`).
        var version = SyncHello.restoreVersion

        /// The frame that announces a bundle in this version.
        var announce: String { version >= SyncHello.streamVersion ? "RESTORE_STREAM" : "RESTORE_BUNDLE" }

        /// A restore of the target home in this version.
        func restorer() throws -> NodeRestore {
            var r = NodeRestore(node: try target.open())
            r.version = version
            return r
        }

        init() throws {
            source = TempHome()
            try simulate(source, days: 1)
            let node = try source.open()
            (lines, hash) = try bundleLines(node, 1, previous: nil)
            state = try node.archive.chainState(observation: 1)
            chain = node.deviceChainHash
            target = TempHome()
            try FileManager.default.createDirectory(atPath: target.root + "/keys", withIntermediateDirectories: true)
            for f in [KeyStore.secretFile, KeyStore.chainSeedFile] {
                try FileManager.default.copyItem(atPath: source.root + "/keys/" + f, toPath: target.root + "/keys/" + f)
            }
        }

        var bytes: [UInt8] { lines.flatMap { $0 + [0x0A] } }

        /// `frames` as the reply to `RESTORE_REQUEST`, behind an honest `CHAIN_STATUS` at 1 (about `chain`, default this one's).
        func answer(frames: [SyncFrame], chain: String? = nil) -> HostileServer.Answer {
            let chain = chain ?? self.chain, manifest = self.hash
            return { m, _ in
                switch m {
                case .chainStatusRequest:
                    return [try! .json(.chainStatus, .object(["device_chain_hash": .string(chain), "last_sequence": .int(1), "last_manifest_hash": .string(manifest)]))]
                case .restoreRequest: return frames
                default: return HostileServer.honest(m, nil)
                }
            }
        }

        /// The frames of this bundle's restore: `RESTORE_BUNDLE` with these members changed, then `parts` (default: the bundle in one honest part);
        /// in version 3, `RESTORE_STREAM`, `parts`, then `RESTORE_STATE` (`state`: the frame instead, none with `[]`).
        func frames(sequence: Int = 1, hash: String? = nil, itemCount: Int? = nil, size: Int? = nil, digest: String? = nil,
                    visible: Int? = nil, parts: [SyncFrame]? = nil, partCount: Int? = nil, state stateFrames: [SyncFrame]? = nil) -> [SyncFrame] {
            let (partCount, itemCount, size) = (partCount ?? parts?.count ?? 1, itemCount ?? lines.count - 2, size ?? bytes.count)
            let parts = parts ?? [Self.part(0, bytes)]
            guard version >= SyncHello.streamVersion else {
                let begin = BundleBegin(sequence: sequence, manifestHash: hash ?? self.hash, parts: partCount, itemCount: itemCount, uncompressedSize: size)
                return [try! RestoreBundle.frame(begin, chainStateDigest: digest ?? state.digest, visibleCount: visible ?? state.visibleCount)] + parts
            }
            let stream = try! SyncFrame.json(.restoreStream, .object([
                "sequence": .int(sequence), "manifest_hash": .string(hash ?? self.hash), "parts": .int(partCount), "item_count": .int(itemCount),
                "uncompressed_size": .int(size)]))
            let after = stateFrames ?? [try! RestoreState.frame(sequence: sequence, chainStateDigest: digest ?? state.digest, visibleCount: visible ?? state.visibleCount)]
            return [stream] + parts + after
        }

        /// `frames(...)` as the reply to `RESTORE_REQUEST`.
        func answer(sequence: Int = 1, hash: String? = nil, itemCount: Int? = nil, size: Int? = nil, digest: String? = nil,
                    visible: Int? = nil, parts: [SyncFrame]? = nil, partCount: Int? = nil) -> HostileServer.Answer {
            answer(frames: frames(sequence: sequence, hash: hash, itemCount: itemCount, size: size, digest: digest, visible: visible, parts: parts, partCount: partCount))
        }

        /// A `RESTORE_PART` of `bytes` declaring `declared` (default: their size).
        static func part(_ index: Int, _ bytes: [UInt8], declared: Int? = nil, zlib: [UInt8]? = nil) -> SyncFrame {
            var b = ByteBuffer()
            b.writeInteger(UInt32(index), endianness: .big)
            b.writeInteger(UInt32(declared ?? bytes.count), endianness: .big)
            b.writeBytes(zlib ?? (try! BundlePartCodec.compress(bytes)))
            return SyncFrame(kind: .restorePart, payload: b)
        }

        /// Observations and log rows the target's archive holds.
        func stored() async throws -> [Int] {
            guard FileManager.default.fileExists(atPath: target.home.archivePath) else { return [0, 0] }
            let archive = try Archive.open(path: target.home.archivePath, mode: .readOnly)
            return try await archive.writer.read { db in
                [try Int.fetchOne(db, sql: "SELECT count(*) FROM observations") ?? -1, try Int.fetchOne(db, sql: "SELECT count(*) FROM bundle_log") ?? -1]
            }
        }
    }

    @Test("every refused RESTORE_BUNDLE vector and every reply that does not fit is refused naming what, in version 2 and in version 3 (the chain state after the parts); nothing is stored; the honest answer then restores",
          arguments: [SyncHello.restoreVersion, SyncHello.streamVersion])
    func hostileRestores(version: UInt16) async throws {
        var f = try Fixture()
        f.version = version
        let other = String(repeating: "b", count: 64)
        let bytes = f.bytes
        var foreign = try Fixture()
        foreign.version = version
        var cases: [(String, HostileServer.Answer, String)] = []
        if version < SyncHello.streamVersion {
            for c in try ReplyVectors.load().cases where c.frame == "RESTORE_BUNDLE" && c.error != nil {
                let vector = SyncFrame(kind: .restoreBundle, payload: ByteBuffer(bytes: Array(c.payload.utf8)))
                cases.append(("vector \(c)", f.answer(frames: [vector, Fixture.part(0, bytes)]), c.field ?? "RESTORE_BUNDLE"))
            }
        } else {
            for c in try ReplyVectors.load().cases where (c.frame == "RESTORE_STREAM" || c.frame == "RESTORE_STATE") && c.error != nil {
                let vector = SyncFrame(kind: c.frame == "RESTORE_STREAM" ? .restoreStream : .restoreState, payload: ByteBuffer(bytes: Array(c.payload.utf8)))
                let frames = c.frame == "RESTORE_STREAM" ? [vector, Fixture.part(0, bytes)] : f.frames(state: [vector])
                cases.append(("vector \(c)", f.answer(frames: frames), c.field ?? c.frame))
            }
            var v2 = f
            v2.version = SyncHello.restoreVersion
            let pong = SyncFrame(kind: .pong, payload: ByteBuffer())
            cases += [
                ("RESTORE_BUNDLE in a version-3 session", f.answer(frames: v2.frames()), "expected RESTORE_STREAM, got RESTORE_BUNDLE"),
                ("no RESTORE_STATE after the parts", f.answer(frames: f.frames(state: [pong])), "expected RESTORE_STATE, got PONG"),
                ("a RESTORE_STATE of another bundle", f.answer(frames: f.frames(state: [try RestoreState.frame(sequence: 2, chainStateDigest: f.state.digest, visibleCount: f.state.visibleCount)])),
                 "RESTORE_STATE.sequence: 2 is not the bundle just sent (1)"),
            ]
        }
        cases += [
            ("another sequence", f.answer(sequence: 2), "\(f.announce).sequence: 2 is not the sequence asked for (1)"),
            ("parts out of order", f.answer(parts: [Fixture.part(1, bytes)]), "RESTORE_PART 1 arrived; expected part 0"),
            ("a part declaring more than the bundle", f.answer(parts: [Fixture.part(0, bytes, declared: bytes.count + 1)]), "more than the"),
            ("a zlib bomb", f.answer(size: 100, parts: [Fixture.part(0, [], declared: 100, zlib: try BundlePartCodec.compress([UInt8](repeating: 0, count: 1 << 20)))]),
             "inflates to more than its declared 100"),
            ("a part over 8 MiB", f.answer(size: 9 << 20, parts: [Fixture.part(0, [], declared: 9 << 20, zlib: [0x78, 0x9c])]), "the limit is 8388608"),
            ("fewer items than declared", f.answer(itemCount: f.lines.count), "declared \(f.lines.count) items"),
            ("PONG instead of a part", f.answer(parts: [SyncFrame(kind: .pong, payload: ByteBuffer())], partCount: 1), "expected RESTORE_PART, got PONG"),
            ("another manifest hash", f.answer(hash: other), "manifest"),
            ("another chain's bundle", f.answer(frames: foreign.frames()), "not this node's chain"),
            ("a chain state other than the bundle's", f.answer(digest: other), "is not the server's"),
            ("a visible count other than the bundle's", f.answer(visible: f.state.visibleCount + 1), "is not the server's"),
        ]
        try await HostileServer.with { server in
            let e = server.enrollment()
            for (name, answer, says) in cases {
                server.answer(answer)
                do {
                    _ = try await f.restorer().restore(e)
                    Issue.record("\(name): accepted")
                } catch {
                    #expect("\(error)".contains(says), "\(name): \(error)")
                }
                #expect(try await f.stored() == [0, 0], "\(name) stored something")
            }
            server.answer(f.answer())
            let report = try await f.restorer().restore(e)
            #expect(report.restored == 1 && report.chainStateDigest == f.state.digest)
            #expect(try await f.stored() == [1, 2], "one observation; logged as received and as sent")
        }
    }

    @Test("bundle 2 is asked for while bundle 1 is checked; when bundle 1 is refused, its refusal is the one named whatever the reply to 2 (another sequence, not_found, an honest bundle), and nothing is stored",
          arguments: [SyncHello.restoreVersion, SyncHello.streamVersion])
    func refusalBeforeTheNextReply(version: UInt16) async throws {
        var f = try Fixture()
        f.version = version
        let other = String(repeating: "b", count: 64)
        let asked = Mutex<[Int]>([])
        /// A chain at 2 whose bundle 1 carries a chain state other than its own (refused once
        /// all its parts arrived, when the node checks its state before commit); `second` answers 2.
        func answer(_ second: [SyncFrame]) -> HostileServer.Answer {
            let (chain, manifest, first) = (f.chain, f.hash, f.frames(digest: other))
            return { m, _ in
                switch m {
                case .chainStatusRequest:
                    return [try! .json(.chainStatus, .object(["device_chain_hash": .string(chain), "last_sequence": .int(2), "last_manifest_hash": .string(manifest)]))]
                case .restoreRequest(let r):
                    asked.withLock { $0.append(r.sequence) }
                    return r.sequence == 1 ? first : second
                default: return HostileServer.honest(m, nil)
                }
            }
        }
        let notFound = try SyncFrame.json(.error, .object(["code": .string("not_found"), "message": .string("no such bundle")]))
        let cases: [(String, [SyncFrame])] = [
            ("another sequence", f.frames(sequence: 3)),
            ("not_found", [notFound]),
            ("bundle 1 again", f.frames()),
        ]
        try await HostileServer.with { server in
            let e = server.enrollment()
            for (name, second) in cases {
                asked.withLock { $0 = [] }
                server.answer(answer(second))
                do {
                    _ = try await f.restorer().restore(e)
                    Issue.record("\(name): accepted")
                } catch {
                    #expect("\(error)".contains("is not the server's"), "\(name): \(error)")
                }
                let (requests, stored) = (asked.withLock { $0 }, try await f.stored())
                #expect(requests == [1, 2], "\(name): bundle 2 was asked for before bundle 1's refusal")
                #expect(stored == [0, 0], "\(name) stored something")
            }
        }
    }
}
